"""Fixtures for the CLI tests: a small runner tree to scan."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def scan_tree(data_dir: Path) -> Path:
    """The scan's rule fixtures: a runner with failing and guarded syncs."""
    return data_dir / "scan" / "rules"

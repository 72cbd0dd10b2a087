"""Shared by every test directory: where test data lives."""

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DATA_DIR = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA_DIR

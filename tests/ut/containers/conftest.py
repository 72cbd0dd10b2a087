"""Fixtures for the container tests: the repository's real container files and the linters.

Broken variants are written to tmp_path by the tests themselves, so each validator is shown to
fail as well as to pass.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vllm_syncgate.containers.devices import load_device_specs

REPO = Path(__file__).resolve().parents[3]


def _tool(name: str) -> str:
    """A linter from the project's environment (lint extra), else from PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[lint]')")
    return found


@pytest.fixture(scope="session")
def repo() -> Path:
    """The checkout; inside the test image (tests without the container files) this skips."""
    if not (REPO / "compose.yaml").exists():
        pytest.skip(f"{REPO} has no compose.yaml: the container files are not in this tree")
    return REPO


@pytest.fixture(scope="session")
def compose_doc(repo: Path) -> dict:
    return yaml.safe_load((repo / "compose.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def specs() -> dict:
    return load_device_specs()


@pytest.fixture(scope="session")
def run_tool(repo: Path):
    """run_tool(name, *args) -> CompletedProcess, run from the repository root."""

    def run(name: str, *args: str) -> subprocess.CompletedProcess:
        # The environment's bin dir first: actionlint runs shellcheck on workflow scripts.
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
        return subprocess.run([_tool(name), *args], cwd=repo, capture_output=True, text=True,
                              timeout=120, check=False, env=env)

    return run

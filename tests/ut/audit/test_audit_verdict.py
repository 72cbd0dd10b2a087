"""Verdicts: a breach names step kind, count and call site; allow-listed sites never count."""

from vllm_syncgate.audit import CallSite, Ledger, StepKind, SyncKind, evaluate
from vllm_syncgate.audit.budgets import parse_budgets

BUDGET = parse_budgets(
    {
        "profile": "t",
        "budget": [
            {
                "runner": "v1",
                "limits": {"default": {"event_sync": 1}},
                "allow": [{"site": "vllm.worker:Runner._capture*", "reason": "graph capture"}],
            }
        ],
    }
).select("v1", speculation=False)

TRANSFER = CallSite("runner.py", 7, "_to_list", "vllm.worker", "Runner._to_list")
BAD = CallSite("runner.py", 99, "_bookkeeping", "vllm.worker", "Runner._bookkeeping")
CAPTURE = CallSite("runner.py", 50, "_capture_graph", "vllm.worker", "Runner._capture_graph")


def _ledger(extra_in_step_3=()):
    ledger = Ledger()
    for i in range(5):
        with ledger.step(StepKind.DECODE if i else StepKind.PREFILL):
            ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=TRANSFER)
            ledger.record(SyncKind.DEVICE_SYNC, "synchronize", site=CAPTURE)
            if i == 3:
                for site, kind in extra_in_step_3:
                    ledger.record(kind, "api", site=site)
    return ledger


def test_within_budget_passes_and_counts_allowed_sites_apart():
    verdict = evaluate(_ledger().steps, BUDGET)
    assert verdict.passed
    assert verdict.allowed == {"vllm.worker:Runner._capture_graph": 5}
    assert verdict.num_steps == {"prefill": 1, "decode": 4}
    assert verdict.per_step_kind["decode"]["event_sync"] == 1.0


def test_breach_names_step_kind_count_and_site():
    ledger = _ledger([(BAD, SyncKind.BLOCKING_READBACK), (BAD, SyncKind.EVENT_SYNC)])
    verdict = evaluate(ledger.steps, BUDGET)
    assert not verdict.passed
    described = sorted(b.describe() for b in verdict.breaches)
    assert described == [
        "decode steps: blocking_readback up to 1 per step (budget 0) in 1 step(s) at runner.py:99:_bookkeeping (x1)",
        "decode steps: event_sync up to 2 per step (budget 1) in 1 step(s) at runner.py:7:_to_list (x1), "
        "runner.py:99:_bookkeeping (x1)",
    ]
    assert verdict.to_json()["breaches"][0]["steps"] == [3]


def test_an_allow_rule_capped_per_step_counts_the_second_wait():
    capped = parse_budgets(
        {
            "profile": "t",
            "budget": [
                {
                    "runner": "v1",
                    "allow": [{"site": "vllm.worker:Runner._to_list", "max_per_step": 1, "reason": "transfer"}],
                }
            ],
        }
    ).select("v1", speculation=False)
    ledger = Ledger()
    with ledger.step(StepKind.DECODE):
        ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=TRANSFER)
    with ledger.step(StepKind.DECODE):
        ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=TRANSFER)
        ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=TRANSFER)
    verdict = evaluate(ledger.steps, capped)
    assert [b.describe() for b in verdict.breaches] == [
        "decode steps: event_sync up to 1 per step (budget 0) in 1 step(s) at runner.py:7:_to_list (x1)"
    ]
    assert verdict.allowed == {"vllm.worker:Runner._to_list": 2}

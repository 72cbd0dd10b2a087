"""The reports draw and print what the verdict decided, not a second reading of the allow-list."""

import matplotlib.axes
import pytest

from vllm_syncgate.audit.budgets import parse_budgets
from vllm_syncgate.audit.events import CallSite, StepKind, SyncEvent, SyncKind
from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.report import CheckResult, plot, table, to_json
from vllm_syncgate.parity import Tolerance

# The transfer wait is allowed once per step: a second one in the same step counts.
CAPPED = parse_budgets({
    "profile": "cpu",
    "budget": [{
        "runner": "v1", "speculation": False, "limits": {"default": {}},
        "allow": [{"site": "vllm.v1.worker.cpu_model_runner:CPUModelRunner._to_list",
                   "kind": "event_sync", "max_per_step": 1, "reason": "the transfer wait"}],
    }],
})
SITE = CallSite("/x/vllm/v1/worker/cpu_model_runner.py", 135, "_to_list",
                "vllm.v1.worker.cpu_model_runner", "CPUModelRunner._to_list")


def _steps():
    """A prefill and two decode steps, each with the transfer wait; the first decode waits twice."""
    steps = []
    for index, (kind, waits) in enumerate([(StepKind.PREFILL, 1), (StepKind.DECODE, 2),
                                           (StepKind.DECODE, 1)]):
        event = SyncEvent(SyncKind.EVENT_SYNC, "transfer_event.synchronize", SITE, index, kind)
        steps.append(Step(index, kind, [event] * waits))
    return steps


class _NoReference:
    def generate(self, prompt_ids, max_new_tokens):
        raise AssertionError("no generation to compare")

    def decode(self, ids):
        return ""


def _result(kit):
    run = kit["scenario_run"]("g", "sequential", [], _steps())
    scenarios, groups = judge([kit["group_run"]("g", [run])], _NoReference(), CAPPED, mode="exact",
                              tolerance=Tolerance(), default_runner="v1")
    return CheckResult({"device": "cpu"}, {}, {}, scenarios, groups)


@pytest.fixture
def drawn(monkeypatch):
    """The bar layers ``plot`` hands to matplotlib: label -> height per step."""
    layers: dict[str, list[int]] = {}
    bar = matplotlib.axes.Axes.bar

    def spy(self, x, height, *args, **kwargs):
        layers[kwargs["label"]] = list(height)
        return bar(self, x, height, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "bar", spy)
    return layers


def test_png_draws_a_second_capped_wait_as_counted_like_the_verdict(judge_kit, drawn, tmp_path):
    result = _result(judge_kit)
    [verdict] = result.scenarios
    [breach] = verdict.sync.breaches
    assert (breach.kind, breach.steps, breach.worst) == ("event_sync", [1], 1)
    plot(result, tmp_path / "syncs.png")
    assert drawn == {"allow-listed": [1, 1, 1], "event_sync": [0, 1, 0]}


def test_table_and_json_tell_counted_means_from_means_with_allowed_syncs(judge_kit):
    result = _result(judge_kit)
    [scenario] = to_json(result)["scenarios"]
    assert scenario["steps"] == {"prefill": 1, "decode": 2}
    assert scenario["mean_syncs_per_decode_step"]["event_sync"] == 1.5
    assert scenario["mean_syncs_per_decode_step_counted"]["event_sync"] == 0.5
    sync = scenario["sync_verdict"]
    assert sync["mean_per_step"]["decode"]["event_sync"] == 0.5
    assert sync["mean_per_step_with_allowed"]["decode"]["event_sync"] == 1.5
    row = table(result).splitlines()[2]
    assert " 1.50 " in row  # the table shows syncs per decode step, allow-listed included

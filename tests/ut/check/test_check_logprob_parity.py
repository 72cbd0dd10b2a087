"""Logprob parity without perturbing the budget: only logprob requests carry logprobs, their steps
get the budget's logprobs_only allowance, and a generation without logprobs may part from HF only
where a logprob request of the same prompt showed the same near tie."""

import pytest

from vllm_syncgate.audit.budgets import builtin_budget_path, load_budgets
from vllm_syncgate.audit.events import LOGPROB_REQS, CallSite, StepKind, SyncEvent, SyncKind
from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.audit.verdict import evaluate
from vllm_syncgate.check.judge import judge
from vllm_syncgate.parity import Tolerance
from vllm_syncgate.parity.reference import ReferenceOutput

PROMPT = (1, 2, 3)
HF = [5, 6, 7, 8]
# HF's top logprobs per position: at index 2 tokens 7 and 70 are a near tie (gap 0.05 nats)
HF_TOP = [{5: -0.1, 50: -3.0}, {6: -0.1, 60: -3.0}, {7: -0.70, 70: -0.75}, {8: -0.1, 80: -3.0}]
FLIPPED = [5, 6, 70, 71]
TOLERANCE = Tolerance(max_rank=2, max_gap=0.1)
TOLISTS = CallSite("/x/vllm/v1/outputs.py", 110, "tolists", "vllm.v1.outputs",
                   "LogprobsTensors.tolists")


class LogprobReference:
    def generate(self, prompt_ids, max_new_tokens):
        return ReferenceOutput(HF[:max_new_tokens], HF_TOP[:max_new_tokens])

    def decode(self, ids):
        return " ".join(map(str, ids))


def _judge(kit, *runs):
    return judge([kit["group_run"]("baseline", list(runs))], LogprobReference(), kit["budgets"],
                 mode="logprob", tolerance=TOLERANCE, default_runner="v1")


def _logprob_run(kit, tokens, top):
    gen = kit["gen"]("short[0]", PROMPT, tokens, max_tokens=4)
    gen.top_logprobs = top
    return kit["scenario_run"]("baseline", "logprob_parity", [gen], kit["clean_steps"]())


def test_a_flip_without_logprobs_passes_only_with_a_logprob_request_showing_it(judge_kit):
    k = judge_kit
    plain = k["scenario_run"]("baseline", "sequential",
                              [k["gen"]("short[0]", PROMPT, FLIPPED, max_tokens=4)],
                              k["clean_steps"]())
    server_top = [*HF_TOP[:2], {70: -0.70, 7: -0.72}, {71: -0.1}]
    verdicts, _ = _judge(k, plain, _logprob_run(k, FLIPPED, server_top))
    assert [v.passed for v in verdicts] == [True, True], [v.failures() for v in verdicts]
    [tie] = verdicts[0].tolerated
    assert "the logprob request of this prompt showed this near tie" in tie.divergence.note
    # the broken variant: no logprob request of that prompt, so the flip is a divergence
    [alone], _ = _judge(k, plain)
    assert not alone.passed
    assert "no logprob request of this prompt showed a near tie here" in alone.failures()[0]


def test_a_flip_elsewhere_or_to_another_token_is_not_explained(judge_kit):
    k = judge_kit
    server_top = [*HF_TOP[:2], {70: -0.70, 7: -0.72}, {71: -0.1}]
    for other in ([5, 6, 7, 80], [5, 6, 50, 8]):
        plain = k["scenario_run"]("baseline", "sequential",
                                  [k["gen"]("short[0]", PROMPT, other, max_tokens=4)],
                                  k["clean_steps"]())
        verdicts, _ = _judge(k, plain, _logprob_run(k, FLIPPED, server_top))
        assert not verdicts[0].passed


@pytest.fixture
def cuda_spec_off():
    return load_budgets(builtin_budget_path("cuda")).select("v1", speculation=False)


def _logprob_step(index, serving):
    """A decode step with the three logprob readbacks of _bookkeeping_sync."""
    step = Step(index=index, kind=StepKind.DECODE)
    step.events = [SyncEvent(SyncKind.BLOCKING_READBACK, "Tensor.cpu", TOLISTS, index,
                             StepKind.DECODE) for _ in range(3)]
    if serving:
        step.meta[LOGPROB_REQS] = 1
    return step


def test_logprob_readbacks_are_allowed_only_in_steps_serving_logprobs(cuda_spec_off):
    assert evaluate([_logprob_step(0, serving=True)], cuda_spec_off).passed
    [breach] = evaluate([_logprob_step(1, serving=False)], cuda_spec_off).breaches
    assert (breach.step_kind.value, breach.kind, breach.worst) == ("decode", "blocking_readback", 3)
    extra = _logprob_step(2, serving=True)
    extra.events.append(extra.events[0])  # a fourth readback: over the cap of three
    [breach] = evaluate([extra], cuda_spec_off).breaches
    assert breach.worst == 1

"""Step kinds from vLLM's real SchedulerOutput objects."""

import pytest

from vllm_syncgate.audit.backends.steps import classify_step
from vllm_syncgate.audit.events import StepKind

sched = pytest.importorskip("vllm.v1.core.sched.output")


def _new(req_id, prompt_len):
    return sched.NewRequestData(
        req_id=req_id,
        prompt_token_ids=list(range(prompt_len)),
        mm_features=[],
        sampling_params=None,
        pooling_params=None,
        block_ids=([0],),
        num_computed_tokens=0,
        lora_request=None,
    )


def _output(new=(), cached=(), resumed=(), spec=None):
    """cached: (req_id, num_scheduled, num_output_tokens)."""
    cached_data = sched.CachedRequestData(
        req_ids=[r for r, _, _ in cached],
        resumed_req_ids=set(resumed),
        new_token_ids=[],
        all_token_ids={},
        new_block_ids=[None] * len(cached),
        num_computed_tokens=[10] * len(cached),
        num_output_tokens=[n for _, _, n in cached],
    )
    scheduled = {r.req_id: len(r.prompt_token_ids) for r in new}
    scheduled |= {r: n for r, n, _ in cached}
    return sched.SchedulerOutput(
        scheduled_new_reqs=list(new),
        scheduled_cached_reqs=cached_data,
        num_scheduled_tokens=scheduled,
        total_num_scheduled_tokens=sum(scheduled.values()),
        scheduled_spec_decode_tokens=spec or {},
        scheduled_encoder_inputs={},
        finished_req_ids=set(),
        free_encoder_mm_hashes=[],
    )


@pytest.mark.parametrize(
    ("output", "kind", "prefill", "decode"),
    [
        (_output(new=[_new("a", 7)]), StepKind.PREFILL, 7, 0),
        (_output(cached=[("a", 1, 3), ("b", 1, 9)]), StepKind.DECODE, 0, 2),
        (_output(new=[_new("c", 5)], cached=[("a", 1, 3)]), StepKind.MIXED, 5, 1),
        # chunked prefill: a cached request with no output token yet is still in its prompt
        (_output(cached=[("a", 1, 0)]), StepKind.PREFILL, 1, 0),
        # resumed after preemption: its tokens are recomputed
        (_output(cached=[("a", 40, 12)], resumed={"a"}), StepKind.PREFILL, 40, 0),
        # spec decode: one token plus three drafts is still decoding
        (_output(cached=[("a", 4, 3)], spec={"a": [1, 2, 3]}), StepKind.DECODE, 0, 4),
        (sched.SchedulerOutput.make_empty(), StepKind.EMPTY, 0, 0),
    ],
)
def test_classify(output, kind, prefill, decode):
    got, meta = classify_step(output)
    assert got is kind
    assert (meta["prefill_tokens"], meta["decode_tokens"]) == (prefill, decode)


def test_without_output_token_counts_falls_back_to_token_shape():
    class Old:  # an older vLLM without CachedRequestData.num_output_tokens
        num_scheduled_tokens = {"a": 1, "b": 4, "c": 9}  # noqa: RUF012
        scheduled_spec_decode_tokens = {"b": [1, 2, 3]}  # noqa: RUF012
        scheduled_new_reqs = ()
        scheduled_cached_reqs = None

    kind, meta = classify_step(Old())
    assert kind is StepKind.MIXED
    assert (meta["prefill_tokens"], meta["decode_tokens"], meta["spec_tokens"]) == (9, 5, 3)

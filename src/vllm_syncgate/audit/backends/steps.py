"""Naming a runner step from vLLM's scheduler output.

A request's scheduled tokens are prompt tokens while it is new, resumed after preemption (its
tokens are recomputed), or still in its context phase (no output token yet: chunked prefill);
otherwise they are decode tokens (one sampled token plus any speculative drafts). Reading only the
scheduler output keeps this independent of the runner's own bookkeeping, which differs between
V1, Model Runner V2 and vllm-ascend. Fields missing in older vLLM versions fall back to counting a
request as decoding when it schedules exactly one token plus its drafts.
"""

from __future__ import annotations

from typing import Any

from vllm_syncgate.audit.events import StepKind


def classify_step(scheduler_output: Any) -> tuple[StepKind, dict[str, Any]]:
    """The step kind and a small metadata dict (token and request counts) for the journal.

    Runs once per step in the decode loop, so it only sums: every token is a decode token except
    those of new, resumed and context-phase requests.
    """
    scheduled: dict[str, int] = getattr(scheduler_output, "num_scheduled_tokens", None) or {}
    spec: dict[str, list[int]] = (
        getattr(scheduler_output, "scheduled_spec_decode_tokens", None) or {}
    )
    total = sum(scheduled.values())
    new_reqs = getattr(scheduler_output, "scheduled_new_reqs", ())
    prefill = sum(scheduled.get(r.req_id, 0) for r in new_reqs) if new_reqs else 0
    cached = getattr(scheduler_output, "scheduled_cached_reqs", None)
    outputs = getattr(cached, "num_output_tokens", None)
    resumed = getattr(cached, "resumed_req_ids", None)
    if outputs is not None and (resumed or 0 in outputs):  # else: a pure decode batch
        for req_id, num_outputs in zip(cached.req_ids, outputs, strict=False):
            if num_outputs == 0 or req_id in resumed:
                prefill += scheduled.get(req_id, 0)
    else:  # older vLLM: a decoding request schedules one token plus its drafts
        new = {r.req_id for r in getattr(scheduler_output, "scheduled_new_reqs", ())}
        prefill += sum(
            n for r, n in scheduled.items() if r not in new and n != 1 + len(spec.get(r, ()))
        )
    decode = total - prefill
    meta = {
        "num_reqs": len(scheduled),
        "num_tokens": total,
        "prefill_tokens": prefill,
        "decode_tokens": decode,
        "spec_tokens": sum(len(v) for v in spec.values()) if spec else 0,
    }
    return StepKind.classify(prefill, decode), meta

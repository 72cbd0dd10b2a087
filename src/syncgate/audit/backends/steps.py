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

from syncgate.audit.events import StepKind


def classify_step(scheduler_output: Any) -> tuple[StepKind, dict[str, Any]]:
    """The step kind and a small metadata dict (token and request counts) for the journal."""
    scheduled: dict[str, int] = dict(getattr(scheduler_output, "num_scheduled_tokens", {}) or {})
    spec: dict[str, list[int]] = dict(
        getattr(scheduler_output, "scheduled_spec_decode_tokens", {}) or {}
    )
    prompt_reqs = {r.req_id for r in getattr(scheduler_output, "scheduled_new_reqs", ())}
    cached = getattr(scheduler_output, "scheduled_cached_reqs", None)
    prompt_reqs |= set(getattr(cached, "resumed_req_ids", ()) or ())
    outputs = getattr(cached, "num_output_tokens", None)
    if cached is not None and outputs is not None:
        prompt_reqs |= {r for r, n in zip(cached.req_ids, outputs, strict=False) if n == 0}
        known = True
    else:
        known = False

    prefill = decode = 0
    for req_id, tokens in scheduled.items():
        drafts = len(spec.get(req_id, ()))
        is_prompt = req_id in prompt_reqs or (not known and tokens != 1 + drafts)
        if is_prompt:
            prefill += tokens
        else:
            decode += tokens
    meta = {
        "num_reqs": len(scheduled),
        "num_tokens": prefill + decode,
        "prefill_tokens": prefill,
        "decode_tokens": decode,
        "spec_tokens": sum(len(v) for v in spec.values()),
    }
    return StepKind.classify(prefill, decode), meta

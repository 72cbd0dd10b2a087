"""Scheduler outputs of one short serving story, in vLLM's own output classes: what a runner's
``_update_states`` receives step by step when requests arrive, prefill in chunks, decode, finish,
and are preempted and resumed.

The numbers follow the scheduler's bookkeeping (computed tokens, one sampled token once a
request's prefill is done, a new KV block when a request crosses a block boundary, all blocks
anew and every token recomputed on resume), so the runner's persistent batch stays consistent
across steps, as it must for the probe to reach every branch of the method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any

from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.output import CachedRequestData, NewRequestData, SchedulerOutput

from vllm_syncgate.audit.events import StepKind

BLOCK_SIZE = 16  # cpu_runner.small_config's
Step = tuple[str, StepKind, Any]  # (label, kind, SchedulerOutput)


@dataclass
class _Request:
    req_id: str
    prompt: list[int]
    params: SamplingParams
    blocks: list[int] = field(default_factory=list)
    computed: int = 0
    outputs: int = 0

    @property
    def tokens(self) -> int:
        return len(self.prompt) + self.outputs

    def all_token_ids(self) -> list[int]:
        return self.prompt + [3 + (i % 200) for i in range(self.outputs)]


class _Story:
    """Builds one scheduler output per step from what was scheduled in it."""

    def __init__(self) -> None:
        self._block_ids = count(1)
        self._seen: set[str] = set()  # scheduled in the previous step
        self._reset()

    def _reset(self) -> None:
        self._new: list[NewRequestData] = []
        self._cached: list[tuple[_Request, list[int] | None, bool]] = []
        self._scheduled: dict[str, int] = {}
        self._finished: set[str] = set()
        self._preempted: set[str] = set()
        self._running: list[tuple[_Request, int]] = []

    def _grow(self, req: _Request, tokens: int) -> list[int]:
        needed = -(-(req.computed + tokens) // BLOCK_SIZE) - len(req.blocks)
        new = [next(self._block_ids) for _ in range(max(0, needed))]
        req.blocks += new
        return new

    def new(self, req: _Request, tokens: int) -> None:
        self._grow(req, tokens)
        self._new.append(NewRequestData(
            req_id=req.req_id, prompt_token_ids=list(req.prompt), mm_features=[],
            sampling_params=req.params, pooling_params=None, block_ids=(list(req.blocks),),
            num_computed_tokens=0, lora_request=None))
        self._run(req, tokens)

    def cont(self, req: _Request, tokens: int = 1) -> None:
        new = self._grow(req, tokens)
        self._cached.append((req, new or None, False))
        self._run(req, tokens)

    def resume(self, req: _Request) -> None:
        """All tokens recomputed into fresh blocks, as after a preemption that freed them."""
        req.blocks, req.computed = [], 0
        self._grow(req, req.tokens)
        self._cached.append((req, list(req.blocks), True))
        self._run(req, req.tokens)

    def preempt(self, req: _Request) -> None:
        self._preempted.add(req.req_id)

    def finish(self, req: _Request) -> None:
        self._finished.add(req.req_id)

    def _run(self, req: _Request, tokens: int) -> None:
        self._scheduled[req.req_id] = tokens
        self._running.append((req, tokens))

    def step(self, label: str) -> Step:
        cached = [r for r, _, _ in self._cached]
        data = CachedRequestData(
            req_ids=[r.req_id for r in cached],
            resumed_req_ids={r.req_id for r, _, resumed in self._cached if resumed},
            new_token_ids=[],
            all_token_ids={r.req_id: r.all_token_ids() for r in cached if r.req_id not in self._seen},
            new_block_ids=[None if new is None else (new,) for _, new, _ in self._cached],
            num_computed_tokens=[r.computed for r in cached],
            num_output_tokens=[r.outputs for r in cached],
        )
        output = SchedulerOutput(
            scheduled_new_reqs=self._new, scheduled_cached_reqs=data,
            num_scheduled_tokens=dict(self._scheduled),
            total_num_scheduled_tokens=sum(self._scheduled.values()),
            scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
            finished_req_ids=set(self._finished), free_encoder_mm_hashes=[],
            preempted_req_ids=set(self._preempted) or None,
        )
        prefilling = any(req.computed + n < req.tokens for req, n in self._running)
        decoding = any(req.outputs for req, _ in self._running)
        kind = (StepKind.MIXED if prefilling and decoding else
                StepKind.PREFILL if not decoding else StepKind.DECODE)
        for req, tokens in self._running:
            req.computed += tokens
            if req.computed >= req.tokens:  # prefill done: the step samples one token
                req.outputs += 1
        self._seen = set(self._scheduled)
        self._reset()
        return label, kind, output


def _prompt(seed: int, length: int) -> list[int]:
    return [3 + (seed * 37 + i * 11) % 250 for i in range(length)]


def serving_story() -> list[Step]:
    """Eight steps over four requests of the default sampling shapes the batch keeps device
    copies for (greedy; temperature/top-p/top-k; penalties). Per-request opt-ins are left out, as
    the budgets leave them out of the default decode loop: vLLM 0.32 copies an ``allowed_token_ids``
    mask from pageable memory when the batch changes, a blocking copy the probe would report."""
    a = _Request("req-greedy", _prompt(1, 20), SamplingParams(temperature=0.0, max_tokens=16))
    b = _Request("req-random", _prompt(2, 9),
                 SamplingParams(temperature=0.8, top_p=0.9, top_k=8, max_tokens=16))
    c = _Request("req-penalty", _prompt(3, 24),
                 SamplingParams(temperature=0.0, repetition_penalty=1.2, presence_penalty=0.5,
                                frequency_penalty=0.3, max_tokens=16))
    d = _Request("req-short", _prompt(4, 6), SamplingParams(temperature=0.0, max_tokens=16))
    story = _Story()
    steps = []
    story.new(a, a.tokens)
    story.new(b, b.tokens)
    story.new(c, 16)  # a chunked prefill: 16 of 24 prompt tokens
    steps.append(story.step("step 1: three new requests, one chunked"))
    story.cont(a)
    story.cont(b)
    story.cont(c, c.tokens - c.computed)
    story.new(d, d.tokens)
    steps.append(story.step("step 2: decode, the chunk's rest, a new request"))
    for label in ("step 3: decode", "step 4: decode"):
        for req in (a, b, c, d):
            story.cont(req)
        steps.append(story.step(label))
    story.finish(b)
    story.preempt(c)
    story.cont(a)
    story.cont(d)
    steps.append(story.step("step 5: one finished, one preempted"))
    story.cont(a)
    story.cont(d)
    steps.append(story.step("step 6: decode without the preempted request"))
    story.resume(c)
    story.cont(a)
    story.cont(d)
    steps.append(story.step("step 7: the preempted request resumed"))
    story.cont(a)
    story.cont(c)
    story.finish(d)
    steps.append(story.step("step 8: decode, one more finished"))
    return steps

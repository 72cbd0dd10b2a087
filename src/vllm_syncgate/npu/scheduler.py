"""A small deterministic scheduler that turns abstract actions into runner steps, with the truth.

Property tests generate the actions (requests added, steps with varying chunk sizes, drafts and
rejections, preemptions, finishes); this model turns them into the ``SchedulerStep`` a runner sees
and keeps the two numbers the seq-lens sync property compares:

- the device-true computed-token count of each request (what the post-sampling kernel has made of
  it: scheduled minus rejected, step after step), and
- the count the scheduler reports for cached requests. With speculation it is optimistic: the
  scheduler has not yet seen the last step's rejections (async scheduling), so it reports the true
  count plus those rejected drafts. Without speculation nothing is rejected and both agree.

A preempted request loses its slot and its computed tokens, and comes back later as a new request
that recomputes everything it had (vLLM's recompute preemption).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from vllm_syncgate.audit.events import StepKind
from vllm_syncgate.npu.state import CachedRequests, NewRequest, SchedulerStep


@dataclass(frozen=True)
class AddRequest:
    prompt_len: int


@dataclass(frozen=True)
class Preempt:
    pick: int  # index into the running requests, modulo their number


@dataclass(frozen=True)
class Finish:
    pick: int


@dataclass(frozen=True)
class Schedule:
    """One step. Choices are cycled over the running requests in admission order."""

    chunks: tuple[int, ...] = (8,)  # prefill chunk limit per request
    drafts: tuple[int, ...] = (0,)  # draft tokens per decoding request (capped by the spec steps)
    rejects: tuple[int, ...] = (0,)  # rejected drafts per decoding request (capped by its drafts)
    order_seed: int = 0  # shuffles the batch order, so batch positions differ from slots


Action = AddRequest | Preempt | Finish | Schedule


@dataclass
class _Request:
    req_id: str
    prompt_len: int  # tokens to (re)compute before decoding
    true_computed: int = 0
    pending_rejected: int = 0  # rejections of the last step the scheduler has not yet seen
    in_slot: bool = False


@dataclass(frozen=True)
class PlannedStep:
    """A step to run, in batch order, with what the device holds when it starts."""

    step: SchedulerStep
    req_ids: list[str]
    num_rejected: list[int]
    device_true: list[int]  # device-true num_computed_tokens before this step
    kind: StepKind

    @property
    def num_scheduled(self) -> list[int]:
        return [self.step.num_scheduled_tokens[r] for r in self.req_ids]

    @property
    def expected_seq_lens(self) -> list[int]:
        return [t + s for t, s in zip(self.device_true, self.num_scheduled, strict=True)]


@dataclass
class ToyScheduler:
    max_num_reqs: int
    num_speculative_steps: int = 0
    running: list[_Request] = field(default_factory=list)
    waiting: list[_Request] = field(default_factory=list)
    _gone: set[str] = field(default_factory=set)  # finished since the last step
    _preempted: set[str] = field(default_factory=set)
    _leaving: dict[str, _Request] = field(default_factory=dict)  # still in a runner slot
    _next_id: int = 0

    def apply(self, action: Action) -> PlannedStep | None:
        """Apply one action; a ``Schedule`` with work returns the step the runner must run."""
        if isinstance(action, AddRequest):
            self.waiting.append(_Request(f"req-{self._next_id}", max(1, action.prompt_len)))
            self._next_id += 1
        elif isinstance(action, Preempt) and self.running:
            req = self.running.pop(action.pick % len(self.running))
            self._preempted.add(req.req_id)
            self._leaving[req.req_id] = req
            self.waiting.append(
                _Request(req.req_id, prompt_len=max(1, req.true_computed))
            )
        elif isinstance(action, Finish) and self.running:
            req = self.running.pop(action.pick % len(self.running))
            self._gone.add(req.req_id)
            self._leaving[req.req_id] = req
        elif isinstance(action, Schedule):
            return self._schedule(action)
        return None

    def _schedule(self, action: Schedule) -> PlannedStep | None:
        while self.waiting and len(self.running) < self.max_num_reqs:
            self.running.append(self.waiting.pop(0))
        if not self.running:
            return None
        new: list[NewRequest] = []
        cached = CachedRequests()
        scheduled: dict[str, int] = {}
        rejected: dict[str, int] = {}
        prefill = decode = 0
        for i, req in enumerate(self.running):
            if req.true_computed < req.prompt_len:
                chunk = max(1, action.chunks[i % len(action.chunks)])
                scheduled[req.req_id] = min(chunk, req.prompt_len - req.true_computed)
                rejected[req.req_id] = 0
                prefill += scheduled[req.req_id]
            else:
                wanted = action.drafts[i % len(action.drafts)]
                drafts = min(self.num_speculative_steps, max(0, wanted))
                scheduled[req.req_id] = 1 + drafts
                rejects = action.rejects[i % len(action.rejects)]
                rejected[req.req_id] = min(drafts, max(0, rejects))
                decode += scheduled[req.req_id]
            if req.in_slot:
                cached.req_ids.append(req.req_id)
                cached.num_computed_tokens.append(req.true_computed + req.pending_rejected)
            else:
                new.append(NewRequest(req.req_id, num_computed_tokens=0))
                req.in_slot = True
        order = [r.req_id for r in self.running]
        random.Random(action.order_seed).shuffle(order)
        by_id = {r.req_id: r for r in self.running}
        planned = PlannedStep(
            step=SchedulerStep(
                scheduled_new_reqs=new,
                scheduled_cached_reqs=cached,
                num_scheduled_tokens=scheduled,
                finished_req_ids=set(self._gone),
                preempted_req_ids=set(self._preempted),
            ),
            req_ids=order,
            num_rejected=[rejected[r] for r in order],
            device_true=[by_id[r].true_computed for r in order],
            kind=StepKind.classify(prefill, decode),
        )
        self._gone.clear()
        self._preempted.clear()
        self._leaving.clear()
        for req in self.running:
            req.true_computed += scheduled[req.req_id] - rejected[req.req_id]
            req.pending_rejected = rejected[req.req_id]
        return planned

    def device_truth(self) -> dict[str, int]:
        """The device-true count of every request the runner holds a slot for now (finished and
        preempted ones keep theirs until the next step tells the runner)."""
        truth = {r.req_id: r.true_computed for r in self._leaving.values()}
        truth.update({r.req_id: r.true_computed for r in self.running if r.in_slot})
        return truth

"""Drive loaded runner methods through planned steps, the way ``execute_model`` orders them.

One step: the parent's bookkeeping, ``_update_seq_lens_cpu`` at the start of ``prepare_inputs``,
the forward pass (opaque device work on the main stream), then ``postprocess_sampled`` after
sampling. Each step is a ledger step, and device-to-host copies issued inside it are read from the
simulated accelerator's activity log: the ledger holds host waits, and an asynchronous copy is not
one, yet the seq-lens sync property forbids it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from vllm_syncgate.audit.events import CallSite, SyncEvent, SyncKind
from vllm_syncgate.fakedev import SimulatedAccelerator, simulated_accelerator
from vllm_syncgate.npu.harness import bind, cuda_mapped_to_npu
from vllm_syncgate.npu.scheduler import Action, PlannedStep, ToyScheduler
from vllm_syncgate.npu.state import RunnerSpec, runner_state

FORWARD_S = 2e-3  # simulated forward pass, long enough that a wait on it shows as blocked time


@dataclass
class StepRecord:
    """What one step did and what it should have produced."""

    index: int
    speculative: bool
    req_ids: list[str]
    seq_lens: list[int]
    expected: list[int]
    syncs: list[SyncEvent]  # the ledger's host waits in this step
    d2h_copies: list[CallSite] = field(default_factory=list)

    @property
    def event_sync_sites(self) -> list[CallSite]:
        return [e.site for e in self.syncs if e.kind is SyncKind.EVENT_SYNC]

    @property
    def matches(self) -> bool:
        return self.seq_lens == self.expected


def run_step(acc: SimulatedAccelerator, runner: Any, planned: PlannedStep) -> StepRecord:
    """Run one planned step on ``runner`` (a bound harness class) inside a ledger step."""
    n = len(planned.req_ids)
    with (
        _state_spec_guard(runner, planned),
        cuda_mapped_to_npu(),
        acc.ledger.step(planned.kind) as step,
    ):
        first_activity = len(acc.activity)
        runner.apply_scheduler_output(planned.step)
        runner._update_seq_lens_cpu(planned.step, list(planned.req_ids))
        seq_lens = runner.input_buffers.seq_lens_np[:n].tolist()
        slots = [runner.req_states.req_id_to_index[r] for r in planned.req_ids]
        acc.enqueue_work(FORWARD_S)
        query_start = [0]
        for count in planned.num_scheduled:
            query_start.append(query_start[-1] + count)
        width = 1 + runner.num_speculative_steps
        runner.postprocess_sampled(
            acc.device_tensor(torch.tensor(slots, dtype=torch.int32)),
            acc.device_tensor(torch.zeros((n, width), dtype=torch.int64)),
            acc.device_tensor(torch.ones(n, dtype=torch.int32)),
            acc.device_tensor(torch.tensor(planned.num_rejected, dtype=torch.int32)),
            acc.device_tensor(torch.tensor(query_start, dtype=torch.int32)),
        )
    return StepRecord(
        index=step.index,
        speculative=runner.speculator is not None,
        req_ids=list(planned.req_ids),
        seq_lens=seq_lens,
        expected=planned.expected_seq_lens,
        syncs=list(step.events),
        d2h_copies=acc.copies_to_host(since=first_activity),
    )


@contextmanager
def _state_spec_guard(runner: Any, planned: PlannedStep) -> Iterator[None]:
    """A method reading state the spec does not have means upstream's layout moved on: say so,
    instead of an ``AttributeError`` from inside upstream code."""
    try:
        yield
    except AttributeError as exc:
        owner = getattr(exc, "obj", None)
        known = [runner, planned.step, planned.step.scheduled_cached_reqs, *vars(runner).values()]
        source = getattr(type(runner), "__syncgate_source__", None)
        if source is None or not any(owner is k for k in known):
            raise
        raise source.missing(
            f"{type(runner).__name__} methods read {type(owner).__name__}.{exc.name},"
            " which syncgate's runner state does not have"
        ) from exc


def read_device_counts(runner: Any) -> dict[str, int]:
    """Device-true ``num_computed_tokens`` per slotted request; a readback, so call it between
    steps (the ledger files it outside any step)."""
    values = runner.req_states.num_computed_tokens.gpu.tolist()
    return {req_id: values[slot] for req_id, slot in runner.req_states.req_id_to_index.items()}


@dataclass(frozen=True)
class Violation:
    """One breach of the seq-lens sync property; ``rule`` is ``a``, ``b`` or ``c``
    (:func:`check_seq_lens_sync`)."""

    rule: str
    step: int
    detail: str
    site: CallSite | None = None  # the first offending call, where there is one

    def __str__(self) -> str:
        return f"({self.rule}) step {self.step}: {self.detail}"


@dataclass
class ScenarioResult:
    records: list[StepRecord]
    device_counts: dict[str, int]  # read back after the last step
    truth: dict[str, int]  # what the scheduler model says the device should hold


def run_scenario(
    runner_cls: type, spec: RunnerSpec, actions: Iterable[Action]
) -> ScenarioResult:
    """Run ``actions`` through a fresh runner of ``runner_cls`` on a fresh simulated NPU."""
    scheduler = ToyScheduler(spec.max_num_reqs, spec.num_speculative_steps)
    records: list[StepRecord] = []
    with simulated_accelerator("npu") as acc:
        runner = bind(runner_cls, runner_state(spec))
        for action in actions:
            planned = scheduler.apply(action)
            if planned is not None:
                records.append(run_step(acc, runner, planned))
        device_counts = read_device_counts(runner)
    return ScenarioResult(records, device_counts, scheduler.device_truth())


def check_seq_lens_sync(records: Iterable[StepRecord]) -> list[Violation]:
    """The seq-lens sync property (no seq-lens sync without speculation), step by step:

    (a) without speculation, no event synchronize and no device-to-host copy;
    (b) ``seq_lens_cpu`` equals the device-true computed tokens plus the scheduled ones;
    (c) with speculation, the copy and the wait do happen.
    """
    found: list[Violation] = []
    for rec in records:
        if not rec.speculative:
            if rec.event_sync_sites:
                where = _where(rec.event_sync_sites)
                found.append(Violation("a", rec.index, f"event synchronize at {where}",
                                       rec.event_sync_sites[0]))
            if rec.d2h_copies:
                where = _where(rec.d2h_copies)
                found.append(Violation("a", rec.index, f"device-to-host copy at {where}",
                                       rec.d2h_copies[0]))
        elif not (rec.event_sync_sites and rec.d2h_copies):
            found.append(Violation(
                "c", rec.index,
                f"with speculation: {len(rec.event_sync_sites)} event synchronize,"
                f" {len(rec.d2h_copies)} device-to-host copies (expected both)",
            ))
        if not rec.matches:
            found.append(Violation(
                "b", rec.index, f"seq_lens {rec.seq_lens} != device-true {rec.expected}"
                f" for {rec.req_ids}",
            ))
    return found


def _where(sites: list[CallSite]) -> str:
    return ", ".join(sorted({str(site) for site in sites}))

"""Probe for ``_to_list``: sampled ids reach the host through a pinned buffer and one event wait.

The contract (vLLM #22760): copy into the pinned buffer with ``non_blocking=True``, record an
event, wait on that event, then read the buffer. A ``.tolist()`` of the device tensor is a blocking
readback that stalls every other stream (vLLM issue #22754); reading the buffer before the wait
returns poison; ``non_blocking`` into pageable memory silently blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch

from vllm_syncgate.audit.budgets import AllowRule
from vllm_syncgate.audit.events import StepKind, SyncKind
from vllm_syncgate.audit.verdict import StepDecisions
from vllm_syncgate.fakedev import SimulatedAccelerator
from vllm_syncgate.probes.result import ProbeResult, ProblemCode, decide_call

ToList = Callable[[Any, torch.Tensor], list[list[int]]]
# The contract's one wait, wherever the method under probe lives (real or mutant).
TRANSFER_WAIT = AllowRule(site="*", kind=SyncKind.EVENT_SYNC.value, max_per_step=1,
                          reason="the one wait on the transfer event")


def to_list_state(acc: SimulatedAccelerator, buffer_rows: int, *, pinned: bool = True) -> Any:
    """The slice of runner state ``_to_list`` touches, built on the simulated device."""
    return SimpleNamespace(
        transfer_event=torch.Event(),
        sampled_token_ids_pinned_cpu=torch.zeros((buffer_rows, 1), dtype=torch.int64, pin_memory=pinned),
    )


def probe_to_list(
    to_list: ToList,
    runner: Any,
    acc: SimulatedAccelerator,
    *,
    num_reqs: int,
    seed: int = 0,
) -> ProbeResult:
    """Call ``to_list(runner, ids)`` for ``num_reqs`` sampled ids in one decode step and judge it."""
    result = ProbeResult("to_list")
    generator = torch.Generator().manual_seed(seed)
    expected = torch.randint(0, 32_000, (num_reqs, 1), generator=generator, dtype=torch.int64)
    ids = acc.device_tensor(expected)
    first_activity = len(acc.activity)
    with acc.ledger.step(StepKind.DECODE, num_reqs=num_reqs) as step:
        try:
            result.value = to_list(runner, ids)
        except (RuntimeError, IndexError, ValueError) as exc:
            result.add(ProblemCode.RAISED, f"{type(exc).__name__}: {exc}".splitlines()[0])
    activity = acc.activity[first_activity:]
    judged = decide_call(step.events, TRANSFER_WAIT)
    result.events = list(step.events)
    result.counts = dict(judged.kinds(with_allowed=True))
    if result.value is not None and result.value != expected.tolist():
        result.add(ProblemCode.WRONG_VALUES, f"got {_head(result.value)}, expected {_head(expected.tolist())}")
    _judge_syncs(result, judged)
    copies = [a for a in activity if a.op == "copy_d2h_async"]
    records = [a for a in activity if a.op == "event_record"]
    if ProblemCode.BLOCKING_COPY not in result.codes and not copies:
        result.add(ProblemCode.MISSING_TRANSFER, "no asynchronous device-to-host copy was issued")
    if len(records) != 1:
        result.add(ProblemCode.MISSING_TRANSFER, f"{len(records)} event records, expected exactly 1")
    elif copies and activity.index(records[0]) < activity.index(copies[-1]):
        result.add(ProblemCode.MISSING_TRANSFER, "the event was recorded before the copy was issued")
    return result


def _judge_syncs(result: ProbeResult, judged: StepDecisions) -> None:
    """Every sync the contract did not allow is a problem, named after its kind."""
    for decision in judged.decisions:
        if not decision.counted:
            continue
        event, site = decision.event, str(decision.event.site)
        if event.kind is SyncKind.BLOCKING_READBACK:
            result.add(ProblemCode.BLOCKING_READBACK, f"{event.api} of a device tensor", site)
        elif event.kind is SyncKind.BLOCKING_COPY:
            result.add(ProblemCode.BLOCKING_COPY, f"{event.api} ({event.detail})", site)
        elif event.kind is SyncKind.EVENT_SYNC:
            result.add(ProblemCode.UNEXPECTED_SYNC, "more than one event wait", site)
        else:
            result.add(ProblemCode.UNEXPECTED_SYNC, f"{event.kind.value} via {event.api}", site)
    if not judged.allowed:
        result.add(ProblemCode.MISSING_TRANSFER, "the host never waited on the transfer event")


def _head(rows: list) -> str:
    return repr(rows[:3])[:-1] + (", ...]" if len(rows) > 3 else "]")

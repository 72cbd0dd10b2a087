"""Probe for ``_update_states``: folding each step's scheduler output into the runner is host work.

The contract: ``_update_states`` and every helper it calls (finished and unscheduled requests
removed, encoder-cache frees, new and resumed requests added, block tables appended, the batch
condensed and its sampling metadata refreshed) only *queue* host-to-device copies from pinned
buffers; the host never waits on the device. It runs once per step before the forward pass, so a
read of a device tensor, a synchronize or a blocking copy anywhere below it stalls every step.
Upstream allows no wait there, so the contract has no allow rule. After each step the runner's
persistent batch holds exactly the requests scheduled in it (what the probe reached is checked,
not assumed: a preempted request left out, a resumed one back).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from typing import Any

from vllm_syncgate.audit.budgets import AllowRule
from vllm_syncgate.audit.events import StepKind, SyncEvent, SyncKind
from vllm_syncgate.fakedev import SimulatedAccelerator
from vllm_syncgate.probes.result import ProbeResult, ProblemCode, decide_call

UpdateStates = Callable[[Any, Any], Any]
#: Nothing is allowed: upstream's ``_update_states`` never waits on the device on purpose.
CONTRACT: tuple[AllowRule, ...] = ()
ASYNC_H2D = "copy_h2d_async"
_CODES = {SyncKind.BLOCKING_READBACK: ProblemCode.BLOCKING_READBACK,
          SyncKind.BLOCKING_COPY: ProblemCode.BLOCKING_COPY}


def probe_update_states(
    update_states: UpdateStates,
    runner: Any,
    acc: SimulatedAccelerator,
    steps: Sequence[tuple[str, StepKind, Any]],
) -> ProbeResult:
    """Call ``update_states(runner, output)`` for each ``(label, kind, output)`` step, one ledger
    step each, and judge every sync recorded there against :data:`CONTRACT`."""
    result = ProbeResult("update_states")
    first_activity = len(acc.activity)
    events: list[SyncEvent] = []
    seen: dict[tuple[SyncKind, str, str], list[str]] = {}  # (kind, site, what) -> steps it stalled
    for label, kind, output in steps:
        with acc.ledger.step(kind, num_reqs=len(output.num_scheduled_tokens)) as step:
            try:
                update_states(runner, output)
            except Exception as exc:  # whatever the code under probe raised is the finding
                result.add(ProblemCode.RAISED, f"{label}: {type(exc).__name__}: {exc}".splitlines()[0],
                           _raised_at(exc))
        events += step.events
        held = set(runner.input_batch.req_ids)
        if ProblemCode.RAISED not in result.codes and held != set(output.num_scheduled_tokens):
            result.add(ProblemCode.WRONG_VALUES, f"{label}: the batch holds {sorted(held)}, "
                                                 f"scheduled were {sorted(output.num_scheduled_tokens)}")
        for decision in decide_call(step.events, *CONTRACT).decisions:
            if decision.counted:
                event = decision.event
                what = event.api if event.kind in _CODES else f"{event.kind.value} via {event.api}"
                seen.setdefault((event.kind, str(event.site), what), []).append(label)
        if ProblemCode.RAISED in result.codes:
            break
    for (kind, site, what), labels in seen.items():
        result.add(_CODES.get(kind, ProblemCode.UNEXPECTED_SYNC),
                   f"{what} in {len(labels)}/{len(steps)} steps (first: {labels[0]})", site)
    result.events = events
    result.counts = {kind: sum(1 for e in events if e.kind.value == kind)
                     for kind in sorted({e.kind.value for e in events})}
    result.counts[ASYNC_H2D] = sum(1 for a in acc.activity[first_activity:] if a.op == ASYNC_H2D)
    return result


def _raised_at(exc: BaseException) -> str:
    """``file:line:function`` of the innermost frame the exception passed through."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f"{last.filename}:{last.lineno}:{last.name}"

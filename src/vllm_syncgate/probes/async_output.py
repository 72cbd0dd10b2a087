"""Probe for async-scheduling outputs (``AsyncGPUModelRunnerOutput`` and its NPU twin).

The contract: the constructor makes a side stream wait for the main stream, issues the
device-to-host copies on the side stream and records an event there, all without the host waiting;
``get_output()`` then waits on that event only, never on the main stream or the device.
"""

from __future__ import annotations

from typing import Any

import torch

from vllm_syncgate.audit.budgets import AllowRule
from vllm_syncgate.audit.events import StepKind, SyncKind
from vllm_syncgate.fakedev import SimulatedAccelerator
from vllm_syncgate.probes.result import ProbeResult, ProblemCode, decide_call

# get_output's one wait, on the event recorded after the copies; the step itself may not wait.
READY_WAIT = AllowRule(site="*", kind=SyncKind.EVENT_SYNC.value, max_per_step=1,
                       reason="the one wait on the copy-ready event")


def probe_async_output(
    output_cls: type,
    model_runner_output: Any,
    acc: SimulatedAccelerator,
    *,
    sampled: torch.Tensor,
    invalid_req_indices: list[int],
    vocab_size: int = 32_000,
) -> ProbeResult:
    """Build ``output_cls`` in one decode step, fetch its output later, and judge both halves."""
    result = ProbeResult("async_output")
    side = torch.cuda.Stream() if acc.flavour == "cuda" else torch.npu.Stream()
    ids = acc.device_tensor(sampled)
    first_activity = len(acc.activity)
    with acc.ledger.step(StepKind.DECODE, num_reqs=int(sampled.shape[0])) as step:
        output = output_cls(
            model_runner_output, ids, None, list(invalid_req_indices), side, vocab_size=vocab_size
        )
    construct = decide_call(step.events)
    activity = acc.activity[first_activity:]
    for decision in construct.decisions:
        event = decision.event
        result.add(ProblemCode.UNEXPECTED_SYNC, f"the step waited: {event.kind.value} via {event.api}", str(event.site))
    waits = [a for a in activity if a.op == "wait_stream"]
    copies = [a for a in activity if a.op == "copy_d2h_async"]
    side_label = acc.stream_label(side._sim)
    if not any(w.stream == side_label and w.other == "default" for w in waits):
        result.add(ProblemCode.WRONG_STREAM, "the side stream never waited for the main stream")
    if not copies:
        result.add(ProblemCode.MISSING_TRANSFER, "no asynchronous device-to-host copy was issued")
    for copy in copies:
        if copy.stream != side_label:
            result.add(ProblemCode.WRONG_STREAM, f"copy issued on {copy.stream}, not on the side stream")
        elif waits and activity.index(copy) < activity.index(waits[0]):
            result.add(ProblemCode.WRONG_STREAM, "copy issued before the side stream waited for the main stream")

    first_event = len(acc.ledger.events)
    fetched = output.get_output()
    fetch_events = acc.ledger.events[first_event:]
    fetch = decide_call(fetch_events, READY_WAIT)
    result.events = [d.event for d in construct.decisions + fetch.decisions]
    result.counts = dict(construct.kinds(with_allowed=True) + fetch.kinds(with_allowed=True))
    for decision in fetch.decisions:
        event = decision.event
        if decision.counted and event.kind is not SyncKind.EVENT_SYNC:
            result.add(ProblemCode.UNEXPECTED_SYNC, f"get_output: {event.kind.value} via {event.api}", str(event.site))
    event_waits = fetch.kinds(with_allowed=True)[SyncKind.EVENT_SYNC.value]
    if event_waits != 1:
        result.add(ProblemCode.MISSING_TRANSFER, f"get_output waited on {event_waits} events, expected 1")
    expected = [[] if i in invalid_req_indices else row for i, row in enumerate(sampled.tolist())]
    result.value = fetched.sampled_token_ids
    if result.value != expected:
        result.add(ProblemCode.WRONG_VALUES, f"got {result.value[:3]}, expected {expected[:3]}")
    return result

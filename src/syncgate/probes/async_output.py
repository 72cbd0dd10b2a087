"""Probe for async-scheduling outputs (``AsyncGPUModelRunnerOutput`` and its NPU twin).

The contract: the constructor makes a side stream wait for the main stream, issues the
device-to-host copies on the side stream and records an event there, all without the host waiting;
``get_output()`` then waits on that event only, never on the main stream or the device.
"""

from __future__ import annotations

from typing import Any

import torch

from syncgate.audit.events import StepKind, SyncKind
from syncgate.fakedev import SimulatedAccelerator
from syncgate.probes.result import ProbeResult, ProblemCode, count_kinds


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
    with acc.ledger.step(StepKind.DECODE, num_reqs=int(sampled.shape[0])):
        output = output_cls(
            model_runner_output, ids, None, list(invalid_req_indices), side, vocab_size=vocab_size
        )
    construct_events = acc.ledger.steps[-1].events
    activity = acc.activity[first_activity:]
    for event in construct_events:
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
    result.events = construct_events + fetch_events
    result.counts = count_kinds(result.events)
    event_waits = [e for e in fetch_events if e.kind is SyncKind.EVENT_SYNC]
    for event in fetch_events:
        if event.kind is not SyncKind.EVENT_SYNC:
            result.add(ProblemCode.UNEXPECTED_SYNC, f"get_output: {event.kind.value} via {event.api}", str(event.site))
    if len(event_waits) != 1:
        result.add(ProblemCode.MISSING_TRANSFER, f"get_output waited on {len(event_waits)} events, expected 1")
    expected = [[] if i in invalid_req_indices else row for i, row in enumerate(sampled.tolist())]
    result.value = fetched.sampled_token_ids
    if result.value != expected:
        result.add(ProblemCode.WRONG_VALUES, f"got {result.value[:3]}, expected {expected[:3]}")
    return result

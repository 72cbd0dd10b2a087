"""The micro-scenarios, in one place: what each does and what a device must make of it.

Each runs against a :class:`Setup` made on the device under test (real or simulated), after a
long kernel has been queued on the current stream. ``blocks``: the host waits for that kernel;
``records``: the sync kind the live audit backend must record (``""``: nothing). The names are
the keys of the recorded H200 table (``h200.toml`` ``[ops]``); scenarios without a measurement
there are checked on live devices and against their expectation only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch


@dataclass
class Setup:
    """Tensors and handles a scenario works on. ``x``: int64 device tensor of 8."""

    ns: ModuleType  # torch.cuda or torch.npu
    device: torch.device
    x: torch.Tensor
    idx: torch.Tensor
    pinned: torch.Tensor
    pageable: torch.Tensor
    pinned_host: torch.Tensor


def make_setup(ns: ModuleType, device: torch.device, to_device: Callable[[torch.Tensor], torch.Tensor]) -> Setup:
    """``to_device`` puts a host tensor on the device (``.to(device)``, or the simulator's helper)."""
    return Setup(
        ns=ns,
        device=device,
        x=to_device(torch.arange(8, dtype=torch.int64)),
        idx=to_device(torch.tensor([0, 2, 4], dtype=torch.int64)),
        pinned=torch.empty(8, dtype=torch.int64, pin_memory=True),
        pageable=torch.empty(8, dtype=torch.int64),
        pinned_host=torch.arange(8, dtype=torch.int64).pin_memory(),
    )


@dataclass(frozen=True)
class Scenario:
    name: str
    code: str  # what it does, for the table
    run: Callable[[Setup], Any]
    blocks: bool
    records: str = ""


def _if_compare(s: Setup) -> None:
    if s.x[0] == 0:
        pass


def _event_synchronize(make_event: Callable[[Setup], Any]) -> Callable[[Setup], None]:
    def run(s: Setup) -> None:
        event = make_event(s)
        event.record()
        event.synchronize()

    return run


def to_list_pattern(s: Setup, ids: torch.Tensor | None = None) -> list[Any]:
    """vLLM's ``_to_list`` shape: pinned buffer, async copy, event record and wait, host read."""
    ids = s.x if ids is None else ids
    buffer = s.pinned[: ids.shape[0]]
    buffer.copy_(ids, non_blocking=True)
    event = s.ns.Event()
    event.record()
    event.synchronize()
    return buffer.tolist()


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("tolist", "x.tolist()", lambda s: s.x.tolist(), True, "blocking_readback"),
    Scenario("item", "x[3].item()", lambda s: s.x[3].item(), True, "blocking_readback"),
    Scenario("cpu", "x.cpu()", lambda s: s.x.cpu(), True, "blocking_readback"),
    Scenario("cpu_numpy", "x.cpu().numpy()", lambda s: s.x.cpu().numpy(), True, "blocking_readback"),
    Scenario("bool_any", "bool((x > 3).any())", lambda s: bool((s.x > 3).any()), True, "blocking_readback"),
    Scenario("if_compare", "if x[0] == 0:", _if_compare, True, "blocking_readback"),
    Scenario("nonzero", "torch.nonzero(x)", lambda s: torch.nonzero(s.x), True, "blocking_readback"),
    Scenario("bool_mask_index", "x[x > 3]", lambda s: s.x[s.x > 3], True, "blocking_readback"),
    Scenario("unique", "torch.unique(x)", lambda s: torch.unique(s.x), True, "blocking_readback"),
    Scenario("format", "f'{x}'", lambda s: f"{s.x}", True, "blocking_readback"),
    Scenario("device_synchronize", "torch.<ns>.synchronize()", lambda s: s.ns.synchronize(), True, "device_sync"),
    Scenario(
        "accelerator_synchronize", "torch.accelerator.synchronize()",
        lambda s: torch.accelerator.synchronize(), True, "device_sync",
    ),
    Scenario(
        "device_event_synchronize", "torch.<ns>.Event().record(); .synchronize()",
        _event_synchronize(lambda s: s.ns.Event()), True, "event_sync",
    ),
    Scenario(
        "torch_event_synchronize", "torch.Event().record(); .synchronize()",
        _event_synchronize(lambda s: torch.Event()), True, "event_sync",
    ),
    Scenario(
        "stream_synchronize", "torch.<ns>.current_stream().synchronize()",
        lambda s: s.ns.current_stream().synchronize(), True, "stream_sync",
    ),
    Scenario("to_list_pattern", "vLLM _to_list (pinned, event wait)", to_list_pattern, True, "event_sync"),
    Scenario(
        "pinned_copy_nonblocking", "pinned.copy_(x, non_blocking=True)",
        lambda s: s.pinned.copy_(s.x, non_blocking=True), False,
    ),
    Scenario(
        "pageable_copy_nonblocking", "pageable.copy_(x, non_blocking=True)",
        lambda s: s.pageable.copy_(s.x, non_blocking=True), True, "blocking_copy",
    ),
    Scenario("pageable_copy", "pageable.copy_(x)", lambda s: s.pageable.copy_(s.x), True, "blocking_copy"),
    Scenario(
        "h2d_pageable_tensor", "torch.tensor([1, 2, 3], device=<dev>)",
        lambda s: torch.tensor([1, 2, 3], device=s.device), True, "blocking_copy",
    ),
    Scenario(
        "h2d_pinned_nonblocking", "x.copy_(pinned_host, non_blocking=True)",
        lambda s: s.x.copy_(s.pinned_host, non_blocking=True), False,
    ),
    Scenario("argmax", "torch.argmax(x.float())", lambda s: torch.argmax(s.x.float()), False),
    Scenario(
        "cumsum_index_select", "torch.cumsum(x, 0).index_select(0, idx)",
        lambda s: torch.cumsum(s.x, 0).index_select(0, s.idx), False,
    ),
)

"""The simulated accelerator: one clock, one ledger, pinned-memory bookkeeping, sync debug mode.

Only one simulated accelerator is active per process, as with a real device context; the
torch-facing stream, event and tensor types find it through :func:`active`.
"""

from __future__ import annotations

import warnings
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch

from vllm_syncgate.audit.events import CallSite, SyncKind, caller_site
from vllm_syncgate.audit.ledger import Ledger
from vllm_syncgate.errors import SimulatorError, SimulatorInactiveError
from vllm_syncgate.fakedev.streams import Action, Clock, HostThread, LatencyModel, Marker, SimStream

FLAVOURS = ("cuda", "npu")
_SYNC_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}
# What torch's own sync debug mode flags (c10 memcpy_and_sync and stream_synchronize); it is
# blind to device synchronize, event synchronize and pageable non_blocking copies.
_DEBUG_MODE_SEES = frozenset({SyncKind.BLOCKING_READBACK, SyncKind.BLOCKING_COPY, SyncKind.STREAM_SYNC})

_ACTIVE: AcceleratorState | None = None


@dataclass(frozen=True)
class Activity:
    """One device operation: ``op`` on ``stream`` (``other``: the stream waited on)."""

    op: str  # event_record | wait_stream | wait_event | copy_d2h_async | copy_d2h_blocking | copy_h2d_async
    stream: str
    other: str = ""
    site: CallSite | None = None  # for copies: the line that issued it


def active() -> AcceleratorState:
    """The accelerator now installed; a clear error when there is none."""
    if _ACTIVE is None:
        raise SimulatorInactiveError(
            "simulated accelerator used outside its context (use vllm_syncgate.fakedev.simulated_accelerator)"
        )
    return _ACTIVE


class AcceleratorState:
    """State of one simulated device: clock, ledger, pinned memory, sync debug mode."""

    def __init__(self, flavour: str, ledger: Ledger | None, latency: LatencyModel) -> None:
        if flavour not in FLAVOURS:
            raise SimulatorError(f"unknown accelerator flavour {flavour!r} (expected cuda or npu)")
        self.flavour = flavour
        self.ledger = ledger if ledger is not None else Ledger()
        self.latency = latency
        if flavour == "npu" and torch._C._get_privateuse1_backend_name() == "privateuseone":
            # torch.device("npu") needs the private-use backend named "npu", as torch_npu does.
            torch.utils.rename_privateuse1_backend("npu")
        self.device = torch.device(flavour, 0)
        self.clock = Clock(latency, self.device)
        self.sync_debug_mode = 0
        self._pinned: dict[int, Any] = {}  # storage data_ptr -> storage, kept alive while active
        self.activity: list[Activity] = []
        self.closed = False

    # --- activation ------------------------------------------------------------------------
    def activate(self) -> None:
        global _ACTIVE
        if _ACTIVE is not None:
            raise SimulatorError("a simulated accelerator is already active; they do not nest")
        _ACTIVE = self

    def deactivate(self) -> None:
        global _ACTIVE
        if _ACTIVE is self:
            _ACTIVE = None
        self.closed = True
        self._pinned.clear()

    def check_open(self) -> None:
        if self.closed or _ACTIVE is not self:
            raise SimulatorInactiveError(
                "simulated stream, event or tensor used after its accelerator context closed"
            )

    def note(
        self, op: str, stream: SimStream, other: SimStream | None = None, *, site: CallSite | None = None
    ) -> None:
        """Remember device work, so checks can ask what ran where, in which order, and from where."""
        self.activity.append(Activity(op, self.stream_label(stream), self.stream_label(other), site))

    def copies_to_host(self, since: int = 0) -> list[CallSite]:
        """Call sites of the device-to-host copies (async or blocking) noted from ``activity[since]`` on."""
        return [a.site for a in self.activity[since:] if a.op.startswith("copy_d2h") and a.site is not None]

    def stream_label(self, stream: SimStream | None) -> str:
        if stream is None:
            return ""
        if stream is self.clock.default_stream:
            return "default"
        return f"stream{self.clock.streams.index(stream)}"

    # --- public helpers --------------------------------------------------------------------
    def enqueue_work(self, seconds: float, stream: SimStream | None = None) -> Marker:
        """Queue ``seconds`` of opaque device work (a kernel, a KV-cache transfer)."""
        self.check_open()
        target = stream if stream is not None else self.clock.current_stream()
        return self.clock.enqueue(_raw_stream(target), seconds)

    def enqueue_copy(
        self, kind: str, nbytes: int, stream: SimStream | None = None, action: Action | None = None
    ) -> Marker:
        """Queue a ``kind`` copy (``d2h_pinned``, ``h2d_pageable``, ``d2d``...) through its copy engine."""
        self.check_open()
        target = _raw_stream(stream) if stream is not None else self.clock.current_stream()
        engine = "h2d" if kind.startswith("h2d") else "d2h"
        return self.clock.enqueue(target, self.latency.copy_seconds(nbytes, kind), action, engine)

    def host_thread(self, name: str, start_s: float) -> AbstractContextManager[HostThread]:
        """Act as host thread ``name`` from simulated time ``start_s`` (a KV connector, say)."""
        return self.clock.host_thread(name, start_s)

    @property
    def host_time(self) -> float:
        return self.clock.host_time

    # --- copies ----------------------------------------------------------------------------
    def begin_copy(self, api: str) -> None:
        """Every copy call first waits for other threads' pageable memcpys in progress (#22754)."""
        held, hold = self.clock.held()
        if hold is not None:
            self.ledger.record_hold(held, api, holder=hold.label, site=caller_site(skip=3))

    def copy_to_host_blocking(
        self, nbytes: int, api: str, *, pageable: bool = True, action: Action | None = None
    ) -> float:
        """A synchronous device-to-host memcpy on the current stream; the host-blocked seconds.

        Into pageable memory the calling thread sits inside the memcpy until its stream drains,
        and holds every other thread's copies for that long.
        """
        self.begin_copy(api)
        start = self.clock.host_time
        marker = self.enqueue_copy("d2h_pageable" if pageable else "d2h_pinned", nbytes, action=action)
        blocked = self.clock.wait_for(marker)
        if pageable:
            self.clock.hold(start, api)
        return blocked

    def is_pinned(self, t: torch.Tensor) -> bool:
        with torch._C.DisableTorchFunctionSubclass():
            if t.device.type != "cpu":
                return False
            return t.untyped_storage().data_ptr() in self._pinned

    def mark_pinned(self, t: torch.Tensor) -> torch.Tensor:
        with torch._C.DisableTorchFunctionSubclass():
            storage = t.untyped_storage()
            self._pinned[storage.data_ptr()] = storage
        return t

    # --- syncs -----------------------------------------------------------------------------
    def record_sync(
        self, kind: SyncKind, api: str, blocked_s: float, detail: str = "", *, debug_visible: bool = True
    ) -> None:
        """Put one host wait in the ledger, and tell torch-style sync debug mode about it.

        ``debug_visible=False`` for waits torch's debug mode cannot see even in a kind it covers:
        a ``non_blocking`` copy through pageable memory is staged by the driver, not by c10.
        """
        if self.sync_debug_mode and debug_visible and kind in _DEBUG_MODE_SEES:
            message = f"called a synchronizing {self.flavour.upper()} operation"
            if self.sync_debug_mode == 2:
                raise RuntimeError(message)
            warnings.warn(message, UserWarning, stacklevel=4)
        self.ledger.record(kind, api, blocked_s=blocked_s, detail=detail, site=caller_site(skip=3))

    def set_sync_debug_mode(self, mode: int | str) -> None:
        if isinstance(mode, str):
            if mode not in _SYNC_DEBUG_MODES:
                raise RuntimeError(
                    "invalid value of debug_mode, expected one of `default`, `warn`, `error`"
                )
            mode = _SYNC_DEBUG_MODES[mode]
        if mode not in (0, 1, 2):
            raise RuntimeError("invalid value of debug_mode, expected one of 0,1,2")
        self.sync_debug_mode = int(mode)


def _raw_stream(stream: object) -> SimStream:
    raw = getattr(stream, "_sim", stream)
    if not isinstance(raw, SimStream):
        raise SimulatorError(f"not a simulated stream: {stream!r}")
    return raw

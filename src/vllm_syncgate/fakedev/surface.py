"""The torch-facing surface of the simulated accelerator, and installing it over torch.

Upstream runner code reaches the device through ``torch.cuda`` (vLLM), ``torch.npu``
(vllm-ascend, via torch_npu), ``torch.Event`` / ``torch.Stream`` and ``torch.accelerator``. All
of them are swapped in for the duration of a context and restored afterwards, also when the body
raises. Factory calls (``torch.empty(..., device="cuda")``, ``pin_memory=True``) are caught by a
``TorchFunctionMode``, which is thread-local: device tensors created on another thread must come
from an op on an existing device tensor (vLLM's output thread only copies, so that holds).
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from vllm_syncgate.audit.events import SyncKind
from vllm_syncgate.fakedev.accelerator import AcceleratorState, active
from vllm_syncgate.fakedev.streams import SimEvent, SimStream
from vllm_syncgate.fakedev.tensors import (
    DeviceTensor,
    acc_is_device,
    as_device,
    copy_host_to_device,
    is_device,
    parse_to,
)
from vllm_syncgate.patching import Patches

_COPYING_FACTORIES = {torch.tensor, torch.as_tensor, torch.asarray}


class SimulatedAccelerator(AcceleratorState):
    """The object ``simulated_accelerator()`` yields: device state plus test set-up helpers."""

    def device_tensor(self, t: torch.Tensor) -> torch.Tensor:
        """A device copy of the host tensor ``t`` (no sync is recorded: this is test set-up)."""
        self.check_open()
        with torch._C.DisableTorchFunctionSubclass():
            data = t.detach().clone()
        return as_device(data)

    def blocking_stream(self) -> Stream:
        """A stream made with default flags (``cudaStreamCreate``), not by ``torch.cuda.Stream()``:
        the legacy default stream and it wait for each other's earlier work."""
        self.check_open()
        return Stream.wrap(self, SimStream(clock=self.clock, blocking=True))


class Stream:
    """``torch.cuda.Stream`` / ``torch.npu.Stream`` / ``torch.Stream`` of the simulator."""

    def __init__(self, device: Any = None, priority: int = 0, **_: Any) -> None:
        acc = active()
        self._acc = acc
        self._sim = SimStream(clock=acc.clock, priority=priority)

    @classmethod
    def wrap(cls, acc: AcceleratorState, sim: SimStream) -> Stream:
        handle = cls.__new__(cls)
        handle._acc, handle._sim = acc, sim
        return handle

    @property
    def device(self) -> torch.device:
        return self._acc.device

    @property
    def priority(self) -> int:
        return self._sim.priority

    def _open(self) -> AcceleratorState:
        self._acc.check_open()
        return self._acc

    def wait_stream(self, stream: Stream) -> None:
        acc = self._open()
        acc.clock.make_wait(self._sim, acc.clock.marker(stream._sim))
        acc.note("wait_stream", self._sim, stream._sim)

    def wait_event(self, event: Event) -> None:
        acc = self._open()
        if event._sim.recorded is not None:
            acc.clock.make_wait(self._sim, event._sim.recorded)
            acc.note("wait_event", self._sim, event._sim.recorded.stream)

    def record_event(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def synchronize(self) -> None:
        acc = self._open()
        blocked = acc.clock.wait_stream(self._sim)
        acc.record_sync(SyncKind.STREAM_SYNC, f"{_ns(acc)}.Stream.synchronize", blocked)

    def query(self) -> bool:
        return not self._open().clock.pending(self._sim)

    def __enter__(self) -> Stream:
        acc = self._open()
        self._previous = acc.clock.current_stream()
        acc.clock.set_current_stream(self._sim)
        return self

    def __exit__(self, *exc: object) -> None:
        self._acc.clock.set_current_stream(self._previous)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other._sim is self._sim

    def __hash__(self) -> int:
        return id(self._sim)

    def __repr__(self) -> str:
        return f"<simulated {self._acc.flavour} stream {self._sim!r}>"


class Event:
    """``torch.cuda.Event`` / ``torch.npu.Event`` / ``torch.Event`` of the simulator."""

    def __init__(
        self,
        device: Any = None,
        *,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
    ) -> None:
        if isinstance(device, bool):  # torch.cuda.Event(enable_timing) positional form
            enable_timing, device = device, None
        acc = active()
        self._acc = acc
        self._sim = SimEvent(acc.clock, enable_timing, blocking, interprocess)

    def _open(self) -> AcceleratorState:
        self._acc.check_open()
        return self._acc

    def record(self, stream: Stream | None = None) -> None:
        acc = self._open()
        sim = stream._sim if stream is not None else acc.clock.current_stream()
        self._sim.record_on(sim)
        acc.note("event_record", sim)

    def wait(self, stream: Stream | None = None) -> None:
        acc = self._open()
        waiter = stream._sim if stream is not None else acc.clock.current_stream()
        if self._sim.recorded is not None:
            acc.clock.make_wait(waiter, self._sim.recorded)
            acc.note("wait_event", waiter, self._sim.recorded.stream)

    def query(self) -> bool:
        self._open()
        marker = self._sim.recorded
        if marker is None:
            return True
        queue = marker.stream.queue
        return not queue or queue[0].seq > marker.seq

    def synchronize(self) -> None:
        acc = self._open()
        marker = self._sim.recorded
        blocked = acc.clock.wait_for(marker) if marker is not None else 0.0
        acc.record_sync(SyncKind.EVENT_SYNC, f"{_ns(acc)}.Event.synchronize", blocked)

    def elapsed_time(self, end_event: Event) -> float:
        self._open()
        return self._sim.elapsed_ms(end_event._sim)

    def __repr__(self) -> str:
        return f"<simulated {self._acc.flavour} event recorded={self._sim.recorded is not None}>"


def _ns(acc: AcceleratorState) -> str:
    return f"torch.{acc.flavour}"


# --- module-level functions ----------------------------------------------------------------------
def current_stream(device: Any = None) -> Stream:
    acc = active()
    return Stream.wrap(acc, acc.clock.current_stream())


def default_stream(device: Any = None) -> Stream:
    acc = active()
    return Stream.wrap(acc, acc.clock.default_stream)


def set_stream(stream: Stream) -> None:
    active().clock.set_current_stream(stream._sim)


@contextlib.contextmanager
def stream(s: Stream | None) -> Iterator[Stream | None]:
    if s is None:
        yield None
        return
    with s:
        yield s


def synchronize(device: Any = None) -> None:
    acc = active()
    blocked = acc.clock.wait_all()
    acc.record_sync(SyncKind.DEVICE_SYNC, f"{_ns(acc)}.synchronize", blocked)


def accelerator_synchronize(device: Any = None) -> None:
    acc = active()
    blocked = acc.clock.wait_all()
    acc.record_sync(SyncKind.DEVICE_SYNC, "torch.accelerator.synchronize", blocked)


def set_sync_debug_mode(debug_mode: int | str) -> None:
    active().set_sync_debug_mode(debug_mode)


def get_sync_debug_mode() -> int:
    return active().sync_debug_mode


def _device_functions(acc: AcceleratorState) -> dict[str, Any]:
    return {
        "Stream": Stream,
        "Event": Event,
        "current_stream": current_stream,
        "default_stream": default_stream,
        "set_stream": set_stream,
        "stream": stream,
        "synchronize": synchronize,
        "set_sync_debug_mode": set_sync_debug_mode,
        "get_sync_debug_mode": get_sync_debug_mode,
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
    }


def _accelerator_functions(acc: AcceleratorState) -> dict[str, Any]:
    return {
        "synchronize": accelerator_synchronize,
        "current_stream": current_stream,
        "set_stream": set_stream,
        "is_available": lambda: True,
        "current_accelerator": lambda check_available=False: acc.device,
        "device_count": lambda: 1,
        "current_device_index": lambda: 0,
    }


# --- factories ------------------------------------------------------------------------------------
class FactoryMode(TorchFunctionMode):
    """Catches host-side calls that create device tensors or pinned buffers."""

    def __init__(self, acc: AcceleratorState) -> None:
        super().__init__()
        self.acc = acc

    def __torch_function__(
        self, func: Any, types_: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if any(issubclass(t, DeviceTensor) for t in types_):
            return func(*args, **kwargs)
        acc = self.acc
        if func is torch.Tensor.is_pinned:
            return acc.is_pinned(args[0])
        if func is torch.Tensor.pin_memory:
            return acc.mark_pinned(args[0].clone())
        if func in (torch.Tensor.to, torch.Tensor.cuda):
            return self._host_to(func, args, kwargs)
        if "device" in kwargs or "pin_memory" in kwargs:
            return self._factory(func, args, kwargs)
        return func(*args, **kwargs)

    def _factory(self, func: Any, args: tuple, kwargs: dict) -> Any:
        pin = bool(kwargs.pop("pin_memory", False))
        on_device = acc_is_device(self.acc, kwargs.get("device"))
        if on_device:
            kwargs["device"] = "cpu"
        out = func(*args, **kwargs)
        if not isinstance(out, torch.Tensor):
            return out
        if on_device:
            dst = as_device(out)
            if func in _COPYING_FACTORIES:  # host data (pageable) copied to the device, synchronously
                copy_host_to_device(self.acc, dst, out, False, f"{func.__name__}(..., device=)")
            return dst
        return self.acc.mark_pinned(out) if pin else out

    def _host_to(self, func: Any, args: tuple, kwargs: dict) -> Any:
        src = args[0]
        if func is torch.Tensor.to:
            device, dtype, non_blocking = parse_to(args, kwargs)
        else:
            device, dtype, non_blocking = self.acc.device, None, bool(kwargs.get("non_blocking"))
        if device is None or not acc_is_device(self.acc, device):
            return func(*args, **kwargs)
        out = torch.empty(src.shape, dtype=dtype or src.dtype)
        dst = as_device(out)
        copy_host_to_device(self.acc, dst, src, non_blocking, "Tensor.to (host to device)")
        return dst


def _npu_method(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """``Tensor.npu()`` as torch_npu adds it."""
    return torch.Tensor.to(self, active().device, *args, **kwargs)


# --- install / restore ----------------------------------------------------------------------------
def install(acc: AcceleratorState, patches: Patches) -> FactoryMode:
    """Swap the simulator in over torch's device surface; returns the factory mode to enter."""
    DeviceTensor._sim_device = acc.device
    functions = _device_functions(acc)
    if acc.flavour == "cuda":
        namespace: Any = torch.cuda
    else:
        existing = getattr(torch, "npu", None)
        namespace = existing if isinstance(existing, types.ModuleType) else types.ModuleType("torch.npu")
        patches.set(torch, "npu", namespace)
        patches.set(torch.Tensor, "npu", _npu_method)
    for name, value in functions.items():
        patches.set(namespace, name, value)
    patches.set(torch, "Event", Event)
    patches.set(torch, "Stream", Stream)
    for name, value in _accelerator_functions(acc).items():
        patches.set(torch.accelerator, name, value)
    return FactoryMode(acc)


__all__ = [
    "Event",
    "FactoryMode",
    "SimulatedAccelerator",
    "Stream",
    "install",
    "is_device",
]

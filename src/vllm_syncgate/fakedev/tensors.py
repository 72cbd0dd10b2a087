"""Device tensors of the simulated accelerator, and what reading or copying them costs the host.

Design: a device tensor is a ``torch.Tensor`` subclass whose data lives in host memory and is
computed eagerly; the subclass only marks residence. That keeps every real torch op working on
real values (upstream runner code does arithmetic, slicing and indexing on device tensors), while
``__torch_function__`` sees exactly the calls that matter: readbacks (``tolist``, ``item``,
``cpu``, ``numpy``, ``bool()``...), data-dependent shapes (``nonzero``, boolean masks) and copies
between device and host. FakeTensor was the alternative; it has no values, so a wrong result from
an early read of a pinned buffer could not be shown, and that is the bug this level exists for.

Asynchronous device-to-host copies into pinned memory fill the destination with poison and
enqueue the real write on the current stream; the write happens when the host waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from vllm_syncgate.audit.events import SyncKind, caller_site
from vllm_syncgate.fakedev.accelerator import AcceleratorState, active
from vllm_syncgate.fakedev.syncing import CONVERSIONS, FORMATTING, data_dependent_entry_points, shape_given

POISON_INT = -777_777_777
_T = torch.Tensor
Handler = Callable[[AcceleratorState, Any, tuple[Any, ...], dict[str, Any]], Any]


class DeviceTensor(torch.Tensor):
    """A tensor resident on the simulated accelerator."""

    _sim_device = torch.device("cuda", 0)

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return DeviceTensor._sim_device

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return DeviceTensor._sim_device.type == "cuda"

    @classmethod
    def __torch_function__(
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        acc = active()
        kwargs = kwargs or {}
        handler = _HANDLERS.get(func)
        if handler is not None:
            return handler(acc, func, args, kwargs)
        return run_on_device(acc, func, args, kwargs)


def as_device(t: torch.Tensor) -> torch.Tensor:
    with torch._C.DisableTorchFunctionSubclass():
        return t.as_subclass(DeviceTensor)


def is_device(x: object) -> bool:
    return isinstance(x, DeviceTensor)


def plain(t: torch.Tensor) -> torch.Tensor:
    """The host-memory view behind a device tensor (no sync: for the simulator's own use)."""
    with torch._C.DisableTorchFunctionSubclass():
        return t.as_subclass(torch.Tensor)


def poison_value(dtype: torch.dtype) -> float | int | bool:
    if dtype == torch.bool:
        return True
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    info = torch.iinfo(dtype)
    return POISON_INT if info.min <= POISON_INT <= info.max else info.min


def is_poison(value: object) -> bool:
    """True for a value read from a host buffer before its device copy landed."""
    if isinstance(value, float):
        return value != value
    return isinstance(value, int) and value in (POISON_INT, -128, -32768)


# --- generic path ------------------------------------------------------------------------------
def run_on_device(acc: AcceleratorState, func: Any, args: tuple, kwargs: dict) -> Any:
    """Run an ordinary op on the values; results stay on the device."""
    with torch._C.DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
    if acc.latency.kernel_s:
        acc.clock.enqueue(acc.clock.current_stream(), acc.latency.kernel_s)
    return torch._tensor._convert(ret, DeviceTensor)


def _nbytes(t: Any) -> int:
    with torch._C.DisableTorchFunctionSubclass():
        return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 8


def _read(acc: AcceleratorState, api: str, nbytes: int, kind: SyncKind = SyncKind.BLOCKING_READBACK) -> None:
    """The host reads ``nbytes`` of the device: a blocking memcpy on the current stream."""
    acc.note("copy_d2h_blocking", acc.clock.current_stream(), site=caller_site(skip=3))
    blocked = acc.copy_to_host_blocking(nbytes, api)
    acc.record_sync(kind, api, blocked)


def _readback(api: str) -> Handler:
    """Conversions to Python, NumPy or text: the whole tensor comes to the host."""

    def handler(acc: AcceleratorState, func: Any, args: tuple, kwargs: dict) -> Any:
        _read(acc, api, _nbytes(args[0]))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

    return handler


def _data_dependent(api: str) -> Handler:
    """Ops whose output shape depends on device values: the host must read them first."""

    def handler(acc: AcceleratorState, func: Any, args: tuple, kwargs: dict) -> Any:
        if not shape_given(api, args, kwargs):
            _read(acc, api, 8)  # the element count
        return run_on_device(acc, func, args, kwargs)

    return handler


def _getitem(acc: AcceleratorState, func: Any, args: tuple, kwargs: dict) -> Any:
    index = args[1]
    indices = index if isinstance(index, tuple) else (index,)
    if any(is_device(i) and i.dtype in (torch.bool, torch.uint8) for i in indices):
        _read(acc, "Tensor.__getitem__ (boolean mask)", 8)
    return run_on_device(acc, func, args, kwargs)


def _setitem(acc: AcceleratorState, func: Any, args: tuple, kwargs: dict) -> Any:
    target, _, value = args[:3]
    if not is_device(target) and is_device(value):
        _read(acc, "Tensor.__setitem__ (device value into host)", _nbytes(value), SyncKind.BLOCKING_COPY)
    return run_on_device(acc, func, args, kwargs) if is_device(target) else _host_op(func, args, kwargs)


def _host_op(func: Any, args: tuple, kwargs: dict) -> Any:
    with torch._C.DisableTorchFunctionSubclass():
        return func(*args, **kwargs)


# --- copies ------------------------------------------------------------------------------------
def copy_device_to_host(
    acc: AcceleratorState, dst: torch.Tensor, src: torch.Tensor, non_blocking: bool, api: str
) -> None:
    """The heart of the simulator: when does ``dst`` hold ``src``'s values, and who waited?"""
    with torch._C.DisableTorchFunctionSubclass():
        snapshot = src.as_subclass(torch.Tensor).detach().clone()
        nbytes = snapshot.numel() * snapshot.element_size()
    host_dst = plain(dst)
    pinned = acc.is_pinned(host_dst)

    def land() -> None:
        with torch._C.DisableTorchFunctionSubclass():
            host_dst.copy_(snapshot)

    if non_blocking and pinned:
        acc.begin_copy(api)
        with torch._C.DisableTorchFunctionSubclass():
            host_dst.fill_(poison_value(host_dst.dtype))
        acc.enqueue_copy("d2h_pinned", nbytes, action=land)
        acc.note("copy_d2h_async", acc.clock.current_stream(), site=caller_site())
        return
    acc.note("copy_d2h_blocking", acc.clock.current_stream(), site=caller_site())
    blocked = acc.copy_to_host_blocking(nbytes, api, pageable=not pinned, action=land)
    why = "non_blocking into pageable memory" if non_blocking else "non_blocking=False"
    acc.record_sync(SyncKind.BLOCKING_COPY, api, blocked, detail=why, debug_visible=not non_blocking)


def copy_host_to_device(
    acc: AcceleratorState, dst: torch.Tensor, src: torch.Tensor, non_blocking: bool, api: str
) -> None:
    """Host to device: asynchronous only from pinned memory with ``non_blocking=True``."""
    with torch._C.DisableTorchFunctionSubclass():
        plain(dst).copy_(src)
        nbytes = src.numel() * src.element_size()
    pinned = acc.is_pinned(src)
    acc.begin_copy(api)
    marker = acc.enqueue_copy("h2d_pinned" if pinned else "h2d_pageable", nbytes)
    if non_blocking and pinned:
        acc.note("copy_h2d_async", acc.clock.current_stream())
        return
    blocked = acc.clock.wait_for(marker)
    why = "non_blocking from pageable memory" if non_blocking else "non_blocking=False"
    acc.record_sync(SyncKind.BLOCKING_COPY, api, blocked, detail=why, debug_visible=not non_blocking)


def _copy_(acc: AcceleratorState, func: Any, args: tuple, kwargs: dict) -> Any:
    dst, src = args[0], args[1]
    non_blocking = bool(kwargs.get("non_blocking", args[2] if len(args) > 2 else False))
    if is_device(dst) and is_device(src):
        return run_on_device(acc, func, args, kwargs)
    if is_device(src):
        copy_device_to_host(acc, dst, src, non_blocking, "Tensor.copy_ (device to host)")
    else:
        copy_host_to_device(acc, dst, src, non_blocking, "Tensor.copy_ (host to device)")
    return dst


def parse_to(args: tuple, kwargs: dict) -> tuple[Any, Any, bool]:
    """(device, dtype, non_blocking) from the many spellings of ``Tensor.to``."""
    device = kwargs.get("device")
    dtype = kwargs.get("dtype")
    non_blocking = bool(kwargs.get("non_blocking", False))
    flags: list[bool] = []
    for arg in args[1:]:
        if isinstance(arg, (str, torch.device)):
            device = arg
        elif isinstance(arg, torch.dtype):
            dtype = arg
        elif isinstance(arg, torch.Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, bool):
            flags.append(arg)
    if flags:
        non_blocking = flags[0]
    return device, dtype, non_blocking


def _to(acc: AcceleratorState, func: Any, args: tuple, kwargs: dict) -> Any:
    src = args[0]
    device, dtype, non_blocking = parse_to(args, kwargs)
    if device is None or acc_is_device(acc, device):
        return run_on_device(acc, func, (src,), {"dtype": dtype} if dtype is not None else {})
    if non_blocking:
        # PyTorch pins the host result of a non_blocking device-to-host .to(), so it is truly async.
        with torch._C.DisableTorchFunctionSubclass():
            out = torch.empty(src.shape, dtype=dtype or src.dtype)
        acc.mark_pinned(out)
        copy_device_to_host(acc, out, src, True, "Tensor.to (device to host)")
        return out
    _read(acc, "Tensor.to (device to host)", _nbytes(src))
    with torch._C.DisableTorchFunctionSubclass():
        out = plain(src).to(dtype=dtype) if dtype is not None else plain(src)
        return out.clone()


def _cpu(acc: AcceleratorState, func: Any, args: tuple, kwargs: dict) -> Any:
    _read(acc, "Tensor.cpu", _nbytes(args[0]))
    with torch._C.DisableTorchFunctionSubclass():
        return plain(args[0]).clone()


def acc_is_device(acc: AcceleratorState, device: object) -> bool:
    try:
        return torch.device(device).type == acc.flavour  # type: ignore[arg-type]
    except (RuntimeError, TypeError):
        return False


def _constant(value: Any) -> Handler:
    return lambda acc, func, args, kwargs: value


def _to_self(acc: AcceleratorState, func: Any, args: tuple, kwargs: dict) -> Any:
    return args[0]


_HANDLERS: dict[Any, Handler] = {
    **{func: _readback(api) for func, api in {**CONVERSIONS, **FORMATTING}.items()},
    **{func: _data_dependent(api) for func, api in data_dependent_entry_points().items()},
    _T.__getitem__: _getitem,
    _T.__setitem__: _setitem,
    _T.copy_: _copy_,
    _T.to: _to,
    _T.cpu: _cpu,
    _T.cuda: _to_self,
    _T.is_pinned: _constant(False),
    _T.get_device: _constant(0),
    _T.record_stream: _constant(None),
}

"""Shared by the CUDA and NPU backends: torch's sync debug mode, plus the waits it cannot see.

During every runner call of a step the backend arms ``torch.<ns>.set_sync_debug_mode("warn")``
(saving and restoring whatever was set, so it nests inside vLLM's own ``VLLM_GPU_SYNC_CHECK``
region, which refcounts the same global mode). torch then warns "called a synchronizing CUDA
operation" (torch_npu: "... NPU operation") for blocking readbacks (``.item()``, ``.tolist()``,
``.cpu()``, ``bool(t)``, ...), blocking copies and ``Stream.synchronize``. Those warnings are
caught at ``warnings._showwarnmsg``, which runs for every warning that passes the filters, before
any ``showwarning`` hook: vLLM re-installs its hook on every checked call and pytest swaps hooks per
test, but neither touches ``_showwarnmsg``. The warning does not say which operation synced, so
the call site's source line decides: a line calling ``.copy_(`` is a ``blocking_copy``, any other a
``blocking_readback``. If vLLM's check is active the warning is passed on (so its error mode still
raises); otherwise it is swallowed rather than logged per step.

The warning does not say which operation synced. While armed, a ``TorchFunctionMode``
(:class:`CopyWatch`) sees each torch call of the step before it runs, so a warning raised inside a
copy (``Tensor.copy_``, a host tensor moved to the device by ``.to``/``.cuda``/``.npu``, or built
there by ``torch.tensor(..., device=)``, all copies from pageable memory) is a ``blocking_copy``;
any other is a ``blocking_readback``. The mode also catches what the debug mode cannot: a
``non_blocking=True`` copy between the device and *pageable* host memory, which the driver
silently makes synchronous (8 ms behind an 8 ms kernel on an H200). It reads only what the call
already holds (``non_blocking``, devices, ``is_pinned()``), so it adds no sync. It is safe under
torch.compile: the mode exists only during the runner's step calls, returns the call untouched
while ``torch.compiler.is_compiling()`` (so Dynamo, tracing through it, records the plain op), and
vLLM's compiled forward runs without Dynamo guards, so the mode on the stack triggers no
recompilation; compiled graphs and CUDA graphs issue their ops below ``__torch_function__``.

The debug mode does not flag ``torch.<ns>.synchronize()`` or ``Event.synchronize()``; those are
counted by wrappers. While a wrapped wait runs, warnings are not counted, so ``Stream.synchronize``
is one ``stream_sync``, not also a readback. ``Tensor`` methods are deliberately not patched:
``__torch_function__`` receives the patched attribute as ``func``, which would change what tensor
subclasses and torch.compile see; a mode leaves ``func`` as it is (vLLM's ``VLLM_GPU_SYNC_CHECK``
patches ``Tensor.copy_``/``to``/``cuda``, so ``func`` is matched by name or by what those
attributes are when the step starts).
"""

from __future__ import annotations

import linecache
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from types import ModuleType
from typing import Any, ClassVar

import torch
from torch.overrides import TorchFunctionMode

from vllm_syncgate.audit.backends.base import AuditBackend
from vllm_syncgate.audit.events import SyncKind, caller_site
from vllm_syncgate.errors import EnvironmentProblem

WARN = 1  # torch's numeric value for the "warn" sync debug mode
VLLM_SYNC_DEBUG = "vllm.utils.gpu_sync_debug"


def vllm_sync_check_active() -> bool:
    """Whether vLLM's own VLLM_GPU_SYNC_CHECK is policing syncs in this process."""
    module = sys.modules.get(VLLM_SYNC_DEBUG)
    return bool(
        module is not None
        and getattr(module, "_SYNC_CHECK_MODE", None) is not None
        and getattr(module, "_sync_check_enabled", False)
    )


_FACTORIES = frozenset({"tensor", "as_tensor", "asarray"})
_MOVES = frozenset({"to", "cuda", "npu"})
_WATCHED = _FACTORIES | _MOVES | {"copy_"}


class CopyWatch(TorchFunctionMode):
    """Sees the copies of a step: marks them for the warning hook, records pageable async ones."""

    def __init__(self, backend: SyncDebugBackend) -> None:
        super().__init__()
        self.backend = backend
        # Whatever Tensor.copy_/to/cuda are now (vLLM's VLLM_GPU_SYNC_CHECK replaces them).
        self._methods = {getattr(torch.Tensor, m): m for m in _WATCHED - _FACTORIES if hasattr(torch.Tensor, m)}

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name not in _WATCHED:
            name = self._methods.get(func, "")
        if not name or torch.compiler.is_compiling():
            return func(*args, **kwargs)
        if not self._is_copy(name, args, kwargs):
            return func(*args, **kwargs)
        with self.backend._deeper("in_copy"):
            return func(*args, **kwargs)

    def _is_copy(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether the call copies between host and device; records it if it silently blocks."""
        ns = self.backend.namespace
        if name in _FACTORIES:
            device = kwargs.get("device")
            return device is not None and torch.device(device).type == ns
        if not args or not isinstance(args[0], torch.Tensor):
            return False
        if name == "copy_":
            if len(args) < 2 or not isinstance(args[1], torch.Tensor):
                return False
            dst, src = args[0], args[1]
            non_blocking = bool(kwargs.get("non_blocking", args[2] if len(args) > 2 else False))
            sides = {dst.device.type, src.device.type}
            if sides != {"cpu", ns}:
                return False
            host = dst if dst.device.type == "cpu" else src
        else:  # to / cuda / npu of a host tensor onto the device (device to host is a readback)
            host = args[0]
            if host.device.type != "cpu" or not _targets(ns, name, args, kwargs):
                return False
            non_blocking = bool(kwargs.get("non_blocking", False)) or any(a is True for a in args[1:])
        if non_blocking and not host.is_pinned():
            direction = "into" if host is args[0] else "from"
            self.backend.record(
                SyncKind.BLOCKING_COPY, f"Tensor.{name} (non_blocking, pageable memory)",
                detail=f"non_blocking copy {direction} pageable memory: the driver waits",
            )
        return True


def _targets(ns: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``Tensor.to``/``cuda``/``npu`` moves its tensor onto device type ``ns``."""
    if name != "to":
        return name == ns
    device = kwargs.get("device")
    for arg in args[1:]:
        if isinstance(arg, (str, torch.device)):
            device = arg
        elif isinstance(arg, torch.Tensor):
            device = arg.device
    try:
        return device is not None and torch.device(device).type == ns
    except (RuntimeError, TypeError):
        return False


class SyncDebugBackend(AuditBackend):
    """A device backend for ``torch.<namespace>`` (``cuda`` or ``npu``)."""

    namespace: ClassVar[str] = ""
    warning_text: ClassVar[str] = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._armed = 0
        self._showwarnmsg: Callable[[Any], Any] | None = None

    def torch_namespace(self) -> ModuleType:
        module = getattr(torch, self.namespace, None)
        if module is None or not hasattr(module, "synchronize"):
            raise EnvironmentProblem(
                f"torch.{self.namespace} is not available: the {self.device} audit backend "
                "needs the device's torch extension in the worker process"
            )
        return module

    # --- lifecycle ---------------------------------------------------------------------------
    def install(self) -> None:
        super().install()
        self._showwarnmsg = warnings._showwarnmsg  # type: ignore[attr-defined]
        self.patches.set(warnings, "_showwarnmsg", self._on_warning)
        if getattr(torch, self.namespace, None) is not None:
            self._arm_namespace()

    def rearm(self) -> None:
        """At runner construction the device extension must be loaded: arm it or say why not."""
        super().rearm()
        self._arm_namespace()

    def _arm_namespace(self) -> None:
        ns = self.torch_namespace()
        self.count_function(ns, "synchronize", SyncKind.DEVICE_SYNC)
        self.count_class(ns, "Event", "synchronize", SyncKind.EVENT_SYNC)
        self.count_class(ns, "Stream", "synchronize", SyncKind.STREAM_SYNC)

    # --- sync debug mode ---------------------------------------------------------------------
    @contextmanager
    def capture(self) -> Iterator[None]:
        ns = self.torch_namespace()
        getter = getattr(ns, "get_sync_debug_mode", None)
        setter = getattr(ns, "set_sync_debug_mode", None)
        if getter is None or setter is None:
            yield
            return
        self._ensure_always_shown()
        previous = getter()
        if previous != WARN:
            setter("warn")
        self._armed += 1
        try:
            with CopyWatch(self) if self._armed == 1 else nullcontext():
                yield
        finally:
            self._armed -= 1
            if previous != WARN:
                setter(previous)

    def _ensure_always_shown(self) -> None:
        """Make repeated sync warnings reach ``_showwarnmsg`` (not deduplicated per location).

        Only added when the first filter matching the text is not already "always" (vLLM adds
        the same one), so the filter list does not grow per step.
        """
        for action, message, category, _module, _lineno in warnings.filters:
            if issubclass(UserWarning, category) and (
                message is None or message.match(self.warning_text)
            ):
                if action == "always":
                    return
                break
        warnings.filterwarnings("always", message=re.escape(self.warning_text), category=UserWarning)

    def _on_warning(self, msg: Any) -> Any:
        assert self._showwarnmsg is not None
        if self._armed and self.warning_text in str(msg.message):
            site = caller_site()
            line = linecache.getline(site.file, site.line)
            kind = SyncKind.BLOCKING_COPY if self._depth("in_copy") else SyncKind.BLOCKING_READBACK
            self.record(kind, f"torch.{self.namespace} sync debug", site=site, detail=line.strip()[:160])
            if not vllm_sync_check_active():
                return None
        return self._showwarnmsg(msg)

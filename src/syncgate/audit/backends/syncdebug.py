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

The debug mode does not flag ``torch.<ns>.synchronize()`` or ``Event.synchronize()``; those are
counted by wrappers. While a wrapped wait runs, warnings are not counted, so ``Stream.synchronize``
is one ``stream_sync``, not also a readback. ``Tensor`` methods are deliberately not wrapped:
``__torch_function__`` receives the patched attribute as ``func``, which would change what tensor
subclasses and torch.compile see. So a ``non_blocking`` copy into pageable memory, which the driver
silently makes blocking and torch does not flag, is not seen here (vLLM's VLLM_GPU_SYNC_CHECK wraps
``Tensor.copy_`` for exactly that; run it next to this backend to catch those).
"""

from __future__ import annotations

import linecache
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, ClassVar

import torch

from syncgate.audit.backends.base import AuditBackend
from syncgate.audit.events import SyncKind, caller_site
from syncgate.errors import EnvironmentProblem

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
            kind = SyncKind.BLOCKING_COPY if ".copy_(" in line else SyncKind.BLOCKING_READBACK
            self.record(kind, f"torch.{self.namespace} sync debug", site=site, detail=line.strip()[:160])
            if not vllm_sync_check_active():
                return None
        return self._showwarnmsg(msg)

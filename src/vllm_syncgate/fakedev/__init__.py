"""A simulated accelerator for the unit level: real runner code, no device.

Inside ``simulated_accelerator("cuda")`` (or ``"npu"``) upstream code sees ``torch.cuda`` /
``torch.npu``, ``torch.Event``, ``torch.Stream`` and ``torch.accelerator`` as if a device were
there. Streams queue work, events mark it, pinned host buffers receive asynchronous copies only
when the host waits, and every wait lands in a sync ledger with its call site and the time the host
would have been blocked. See :mod:`vllm_syncgate.fakedev.tensors` for why device tensors are a tensor
subclass, and :mod:`vllm_syncgate.fakedev.streams` for the latency model.

Example::

    with simulated_accelerator("cuda") as acc:
        ids = acc.device_tensor(torch.tensor([[1], [2]]))
        assert GPUModelRunner._to_list(runner, ids) == [[1], [2]]
        assert acc.ledger.counts() == {"event_sync": 1}
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from vllm_syncgate.audit.ledger import Ledger
from vllm_syncgate.fakedev.accelerator import FLAVOURS, active
from vllm_syncgate.fakedev.streams import LatencyModel
from vllm_syncgate.fakedev.surface import Event, SimulatedAccelerator, Stream, install
from vllm_syncgate.fakedev.tensors import POISON_INT, DeviceTensor, is_device, is_poison
from vllm_syncgate.patching import Patches


@contextmanager
def simulated_accelerator(
    flavour: str = "cuda",
    *,
    ledger: Ledger | None = None,
    latency: LatencyModel | None = None,
) -> Iterator[SimulatedAccelerator]:
    """Install a simulated ``flavour`` device over torch; restore torch on exit, also on errors."""
    acc = SimulatedAccelerator(flavour, ledger, latency or LatencyModel())
    acc.activate()
    patches = Patches()
    try:
        mode = install(acc, patches)
        with mode:
            yield acc
    finally:
        patches.restore()
        acc.deactivate()


__all__ = [
    "FLAVOURS",
    "POISON_INT",
    "DeviceTensor",
    "Event",
    "LatencyModel",
    "SimulatedAccelerator",
    "Stream",
    "active",
    "is_device",
    "is_poison",
    "simulated_accelerator",
]

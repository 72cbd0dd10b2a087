"""A V0 backend: no metadata builder, the runner fills the metadata on the device."""

from dataclasses import dataclass

import torch


@dataclass
class ToyPagedMetadata:
    block_groups: torch.Tensor


@dataclass
class ToyHPUAttentionMetadata(ToyPagedMetadata):
    is_prompt: bool


class ToyHPUAttentionBackend:
    @staticmethod
    def get_impl_cls():
        return ToyHPUAttentionImpl


class ToyHPUAttentionImpl(torch.nn.Module):
    def forward(self, query: torch.Tensor, attn_metadata: ToyHPUAttentionMetadata) -> torch.Tensor:
        valid = (attn_metadata.block_groups == 0).sum().item()  # expect: blocking_readback none
        return query[:, :valid]

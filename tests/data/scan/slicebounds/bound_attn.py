"""An attention backend of our own whose forward unpads the query by the step's token count.

The builder uploads the query starts (``query_start_loc``) to the device and keeps the host
copy next to them. Slicing by the last element of the device starts converts a 0-dim device
tensor to a Python int (``__index__``): a readback in every layer. The same bound read from
the host copy, from an ``int`` field or from a Python list is free.
"""

from dataclasses import dataclass

import torch


@dataclass
class BoundMetadata:
    query_start_loc: torch.Tensor
    query_start_loc_cpu: torch.Tensor
    num_actual_tokens: int
    query_lens: list[int]


class FlashAttentionMetadataBuilder:
    def build(self, query_start_loc_cpu: torch.Tensor, num_tokens: int,
              query_lens: list[int]) -> BoundMetadata:
        return BoundMetadata(
            query_start_loc=query_start_loc_cpu.to("cuda", non_blocking=True),
            query_start_loc_cpu=query_start_loc_cpu,
            num_actual_tokens=num_tokens,
            query_lens=query_lens,
        )


class BoundBackend:
    @staticmethod
    def get_builder_cls():
        return FlashAttentionMetadataBuilder

    @staticmethod
    def get_impl_cls():
        return BoundAttentionImpl


class BoundAttentionImpl:
    def forward(self, query: torch.Tensor, attn_metadata: BoundMetadata,
                output: torch.Tensor) -> torch.Tensor:
        num_tokens = attn_metadata.query_start_loc[-1]
        query = query[:num_tokens]  # expect: blocking_readback none
        output[:attn_metadata.query_start_loc.sum(), :] = query  # expect: blocking_readback none
        host_tokens = attn_metadata.query_start_loc_cpu[-1]
        kept = output[:host_tokens]
        counted = output[:attn_metadata.num_actual_tokens]
        listed = output[:attn_metadata.query_lens[-1]]
        return kept + counted + listed + self._per_sequence(query, attn_metadata)

    def _per_sequence(self, query: torch.Tensor, attn_metadata: BoundMetadata) -> torch.Tensor:
        """A reference loop over the sequences: each bound an element picked by the loop index."""
        starts = attn_metadata.query_start_loc
        starts_cpu = attn_metadata.query_start_loc_cpu
        parts = []
        for i in range(len(attn_metadata.query_lens)):
            parts.append(query[starts[i]:starts[i + 1]].sum(0))  # expect: blocking_readback none
            parts.append(query[starts_cpu[i]:starts_cpu[i + 1]].sum(0))
        return torch.stack(parts)

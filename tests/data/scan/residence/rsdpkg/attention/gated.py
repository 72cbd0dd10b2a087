"""A gated linear-attention backend (the GDN shape): its builder takes the batch's record through
a helper that hands back a rewritten record, derives a device mask from a method of that record,
and builds chunk offsets on the host with integer helpers; its layer stores through the masks it
reads off the forward context's record (one derived from the record's method, one compared with
a literal from a value of unknown residence)."""

from dataclasses import dataclass

import torch
import triton

from rsdpkg.context import get_forward_context


@dataclass
class RsdGatedCommonAttentionMetadata:
    query_start_loc: torch.Tensor
    query_start_loc_cpu: torch.Tensor
    kv_lens: torch.Tensor

    def computed_tokens(self) -> torch.Tensor:
        return self.kv_lens - (self.query_start_loc[1:] - self.query_start_loc[:-1])

    def longest(self) -> int:
        return int(self.kv_lens.max())  # expect: blocking_readback none ownfields


@dataclass
class RsdGatedAttentionMetadata:
    has_state: torch.Tensor
    warm: torch.Tensor
    offsets: torch.Tensor


def _single_token_prefills_as_decodes(
        meta: RsdGatedCommonAttentionMetadata) -> RsdGatedCommonAttentionMetadata:
    return meta


def _lens(cu: torch.Tensor) -> torch.Tensor:
    return cu[1:] - cu[:-1]


def _chunk_offsets(cu: torch.Tensor, chunk: int) -> torch.Tensor:
    counts = triton.cdiv(_lens(cu), chunk) + 1
    return torch.cat([cu.new_tensor([0]), counts]).cumsum(-1)


class RsdGatedMetadataBuilder:
    def build(self, common_attn_metadata: RsdGatedCommonAttentionMetadata,
              device: torch.device) -> RsdGatedAttentionMetadata:
        m = _single_token_prefills_as_decodes(common_attn_metadata)
        context = m.computed_tokens()
        first = context[:1].tolist()  # expect: blocking_readback none records
        has_state = context > 0
        if len(first) > m.longest():
            has_state = torch.index_select(has_state, 0, torch.arange(len(first)))
        offsets = _chunk_offsets(m.query_start_loc_cpu, 64)
        warm = self.lengths > 0
        return RsdGatedAttentionMetadata(
            has_state=has_state,
            warm=warm,
            offsets=offsets.to(device, non_blocking=True),  # expect: blocking_copy none hostops
        )


class RsdGatedLayer(torch.nn.Module):
    def _forward_core(self, indices: torch.Tensor) -> None:
        meta = get_forward_context().attn_metadata[self.prefix]
        has_state = meta.has_state
        state = self.kv_cache[1][indices].contiguous()
        state[~has_state, ...] = 0  # expect: blocking_readback none records
        state[~meta.warm] = 0  # expect: blocking_readback none literals

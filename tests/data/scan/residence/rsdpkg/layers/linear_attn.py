"""A linear-attention layer that reads its metadata from the forward context (the GDN shape)."""

import torch

from rsdpkg.context import get_forward_context
from rsdpkg.ops.chunked import run_chunked


class RsdLinearAttention(torch.nn.Module):
    def _forward_core(self, mixed: torch.Tensor, out: torch.Tensor) -> None:
        forward_context = get_forward_context()
        attn_metadata = forward_context.attn_metadata
        if attn_metadata is None:
            return
        attn_metadata = attn_metadata[self.prefix]
        starts = attn_metadata.query_start_loc
        starts_host = attn_metadata.query_start_loc_cpu
        bounds = starts_host.tolist()
        if attn_metadata.num_prefills > 0:
            out[: bounds[-1]] = run_chunked(mixed, cu_seqlens=starts)
        first = forward_context.attn_metadata.get(self.prefix).num_decode_tokens
        state_ids = attn_metadata.state_indices[:first].tolist()  # expect: blocking_readback none context
        return state_ids

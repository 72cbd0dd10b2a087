"""The default attention backend of the fixture: the platform picks it for a standard model
(its builder is a default implementation), so its impl's forward runs every layer, every step."""

import torch

from fwd_ascend.attention.utils import StepMetadata


class AscendAttentionBackend:
    @staticmethod
    def get_builder_cls():
        return AscendAttentionMetadataBuilder

    @staticmethod
    def get_impl_cls():
        return AscendAttentionBackendImpl


class AscendAttentionMetadataBuilder:
    def __init__(self, config, device):
        self.device = device

    def build(self, common_prefix_len, step: StepMetadata):
        return step


class AscendAttentionBackendImpl:
    def __init__(self, num_heads, head_size, pcp_size=1):
        self.num_heads = num_heads
        self.pcp_size = pcp_size

    def forward(self, layer, query, key, value, kv_cache, attn_metadata, output=None):
        if attn_metadata is None:
            return output  # profiling run
        if self.pcp_size > 1:
            return self._forward_pcp(query, attn_metadata)
        if attn_metadata.num_prefills > 0:
            # prefill-only work still runs in every step that has a prefill: the default path
            self._forward_prefill(query, attn_metadata)
        return output

    def _forward_prefill(self, query, attn_metadata):
        no_lse = torch.tensor([], device=query.device)  # no element to copy: not a sync
        lens = torch.tensor(attn_metadata.seq_lens_list, device=query.device)  # expect: blocking_copy none impl
        return lens, no_lse

    def _forward_pcp(self, query, attn_metadata):
        torch.npu.synchronize()  # expect: device_sync opt_in impl
        return query

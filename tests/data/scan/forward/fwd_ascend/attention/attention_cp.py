"""A context-parallel backend: only an option picks it (its builder is no default), so its
impl's forward is opt-in, scanned when the command line names this file."""

import torch


class AscendCPBackend:
    @staticmethod
    def get_builder_cls():
        return AscendAttentionCPMetadataBuilder

    @staticmethod
    def get_impl_cls():
        return AscendAttentionCPImpl


class AscendAttentionCPMetadataBuilder:
    def build(self, common_prefix_len, step):
        return step


class AscendAttentionCPImpl:
    def forward(self, layer, query, key, value, kv_cache, attn_metadata, output=None):
        torch.npu.synchronize()  # expect: device_sync opt_in cp_impl
        return output

"""A backend no name list knows: a layer of its model family returns it from its own
``get_attn_backend()``, so its builder is that family's default (found by structure)."""

import torch

from fampkg.v1.attention.backend import AttentionBackend, AttentionMetadataBuilder


class DeltaRuleMetadataBuilder(AttentionMetadataBuilder):
    def __init__(self, config, device):
        super().__init__(config, device)
        self.has_state = torch.zeros(config.max_num_reqs, dtype=torch.bool, device=device)

    def build(self, common_prefix_len, step):
        state_rows = torch.nonzero(self.has_state[: step.num_reqs])  # expect: blocking_readback none layer
        return state_rows


class DeltaRuleBackend(AttentionBackend):
    @staticmethod
    def get_builder_cls():
        return DeltaRuleMetadataBuilder

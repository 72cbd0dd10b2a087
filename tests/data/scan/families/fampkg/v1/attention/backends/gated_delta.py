"""A gated-delta-net builder: the backend a hybrid linear-attention model's layers get by their
type (no option picks it)."""

import torch

from fampkg.v1.attention.backend import AttentionMetadataBuilder


class GDNAttentionMetadataBuilder(AttentionMetadataBuilder):
    def __init__(self, config, device):
        super().__init__(config, device)
        self.lens = torch.zeros(config.max_num_reqs, dtype=torch.int32, device=device)

    def build(self, common_prefix_len, step):
        spec_sequence_masks = step.spec_masks if step.num_spec_decodes > 0 else None
        lens = self.lens[: step.num_reqs]
        lens.copy_(step.query_lens)
        num_prefill_tokens = lens[lens > 1].sum()  # expect: blocking_readback none gdn
        if spec_sequence_masks is not None:
            accepted = self.lens[: step.num_reqs].sum().item()  # expect: blocking_readback speculation gdn
            return num_prefill_tokens, accepted
        return num_prefill_tokens, 0

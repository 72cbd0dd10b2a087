"""A backend only another model family picks: its build is opt-in on this device."""

import torch

from bldpkg.v1.attention.backend import AttentionMetadataBuilder


class LatentMetadataBuilder(AttentionMetadataBuilder):
    def __init__(self, config, device):
        super().__init__(config, device)
        self.prefill_flags = torch.zeros(config.max_num_reqs, dtype=torch.int32, device=device)

    def build(self, common_prefix_len, common):
        prefills = int(self.prefill_flags[: common.num_reqs].sum())  # expect: blocking_readback opt_in default
        return prefills

    def update_block_table(self, metadata, slots):
        prefilling = torch.nonzero(self.prefill_flags)  # expect: blocking_readback opt_in default
        return metadata, slots, prefilling

"""An alternative backend only an environment variable selects on this device: opt-in, and not
read unless the command line names it."""

import torch

from fampkg.v1.attention.backend import AttentionMetadataBuilder


class FlashInferMetadataBuilder(AttentionMetadataBuilder):
    def __init__(self, config, device):
        super().__init__(config, device)
        self.page_counts = torch.zeros(config.max_num_reqs, dtype=torch.int32, device=device)

    def build(self, common_prefix_len, step):
        plan = self.page_counts[: step.num_reqs].tolist()  # expect: blocking_readback opt_in alt
        return plan

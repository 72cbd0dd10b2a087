"""The backend a standard model gets by default: its build runs every step."""

import numpy as np
import torch

from bldpkg.v1.attention.backend import AttentionMetadataBuilder


class FlashAttentionMetadataBuilder(AttentionMetadataBuilder):
    def __init__(self, config, device):
        super().__init__(config, device)
        self.lens_dev = torch.zeros(config.max_num_reqs, dtype=torch.int32, device=device)
        self.causal = None

    def build(self, common_prefix_len, common):
        n = common.num_reqs
        lens = common.seq_lens_cpu[:n]
        longest_host = int(lens.max())
        # a padding row appended on the host (device= of a host value): read on the host
        lens = torch.cat(
            [lens, torch.ones(1, dtype=lens.dtype, device=lens.device)]
        )
        widths = lens.tolist()
        self.lens_dev[:n].copy_(lens, non_blocking=True)  # expect: blocking_copy none dispatch
        longest = self.lens_dev[:n].max().item()  # expect: blocking_readback none dispatch
        starts = torch.from_numpy(np.cumsum(lens.numpy())).to(self.device, non_blocking=True)  # expect: blocking_copy none dispatch
        return (longest_host, widths, longest, starts, self.causal_mask())

    def causal_mask(self):
        if self.causal is None:
            self.causal = torch.from_numpy(np.triu(np.ones((64, 64)), 1)).to(self.device)  # expect: blocking_copy warmup lazy
        return self.causal


class FlashAttentionCPMetadataBuilder(FlashAttentionMetadataBuilder):
    """Context parallel: another deployment, same build."""

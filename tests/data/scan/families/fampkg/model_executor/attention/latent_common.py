"""The common build of every latent-attention builder (lives beside the layers, not the
backends: the scan follows a default builder's base into its module)."""

import torch

from fampkg.v1.attention.backend import AttentionMetadataBuilder


class LatentCommonMetadataBuilder(AttentionMetadataBuilder):
    def __init__(self, config, device):
        super().__init__(config, device)
        self.chunk_starts = torch.zeros(config.max_num_reqs, dtype=torch.int64, device=device)

    def build(self, common_prefix_len, step):
        widths = self.decode_widths(step)
        torch.cumsum(step.query_lens, dim=0, out=self.chunk_starts[1 : step.num_reqs + 1])
        longest_chunk = int(self.chunk_starts[step.num_reqs])  # expect: blocking_readback none mla
        return widths, longest_chunk

    def decode_widths(self, step):
        raise NotImplementedError

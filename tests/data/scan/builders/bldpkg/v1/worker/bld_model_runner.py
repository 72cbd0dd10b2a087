"""A runner that builds attention metadata per KV-cache group every step (our own shape)."""

import torch

from bldpkg.v1.attention.backend import CommonMetadata
from bldpkg.v1.attention.backends.latent import LatentMetadataBuilder
from bldpkg.v1.attention.backends.utils import padded
from bldpkg.v1.worker.groups import KVGroup


class BldModelRunner:
    def __init__(self, config, device):
        self.device = device
        self.attn_groups: list[list[KVGroup]] = []
        self.seq_lens_cpu = torch.zeros(config.max_num_reqs, dtype=torch.int32, pin_memory=True)
        self.slots = torch.zeros(config.max_num_tokens, dtype=torch.int64, device=device)

    def execute_model(self, batch):
        return self._build_attention_metadata(batch)

    def _build_attention_metadata(self, batch):
        num_reqs = padded(batch.num_reqs)
        common = CommonMetadata(num_reqs, self.seq_lens_cpu[:num_reqs], self.slots)
        result = {}
        for groups in self.attn_groups:
            for group in groups:
                result[group.name] = group.build_metadata(common)
        cached = result.get("shared")
        if cached is not None:
            builder = self.attn_groups[0][0].get_metadata_builder()
            if isinstance(builder, LatentMetadataBuilder):
                result["shared"] = builder.update_block_table(cached, self.slots)
        return result

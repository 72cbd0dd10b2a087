"""A runner that builds attention metadata per KV-cache group every step (our own shape)."""

import torch

from fampkg.v1.attention.backend import StepMetadata
from fampkg.v1.attention.backends.utils import rounded
from fampkg.v1.worker.kv_groups import CacheGroup


class FamModelRunner:
    def __init__(self, config, device):
        self.device = device
        self.attn_groups: list[list[CacheGroup]] = []
        self.query_lens_cpu = torch.zeros(config.max_num_reqs, dtype=torch.int32, pin_memory=True)
        self.query_lens = torch.zeros(config.max_num_reqs, dtype=torch.int32, device=device)

    def execute_model(self, batch):
        num_reqs = rounded(batch.num_reqs)
        step = StepMetadata(num_reqs, self.query_lens_cpu[:num_reqs], self.query_lens[:num_reqs])
        built = {}
        for groups in self.attn_groups:
            for group in groups:
                built[group.name] = group.build_metadata(step)
        return built

"""A runner that builds attention metadata per KV-cache group every step (our own shape)."""

import torch

from opspkg.v1.attention.backend import StepMetadata
from opspkg.v1.attention.backends.utils import rounded
from opspkg.v1.worker.groups import Group


class OpsModelRunner:
    def __init__(self, config, device):
        self.attn_groups: list[list[Group]] = []
        self.query_start_loc_cpu = torch.zeros(config.max_num_reqs + 1, dtype=torch.int32,
                                               pin_memory=True)

    def execute_model(self, batch):
        n = rounded(batch.num_reqs)
        step = StepMetadata(n, self.query_start_loc_cpu[: n + 1])
        built = []
        for groups in self.attn_groups:
            for group in groups:
                built.append(group.build_metadata(step))
        return built

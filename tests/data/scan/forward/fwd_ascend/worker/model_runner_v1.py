"""A plugin runner (our own shape): its step reaches the model only through ``self.model(...)``,
a model the loader builds, so nothing here calls the forward's code by name."""

import torch

from fwd_ascend.attention.utils import StepMetadata


class NPUModelRunner:
    def __init__(self, config, device):
        self.device = device
        self.query_start_loc_cpu = torch.zeros(config.max_num_reqs + 1, dtype=torch.int32,
                                               pin_memory=True)

    def execute_model(self, batch):
        step = StepMetadata(batch.num_reqs, self.query_start_loc_cpu[: batch.num_reqs + 1])
        return self.model(batch.input_ids, step)

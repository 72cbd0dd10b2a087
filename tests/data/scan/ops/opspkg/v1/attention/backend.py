"""The builder base and the per-step record a builder reads (our own shape)."""

from dataclasses import dataclass

import torch


@dataclass
class StepMetadata:
    num_reqs: int
    query_start_loc_cpu: torch.Tensor


class AttentionMetadataBuilder:
    def __init__(self, config, device):
        self.config = config
        self.device = device

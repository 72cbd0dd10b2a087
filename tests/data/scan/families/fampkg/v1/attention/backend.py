"""The builder base, the backend base and the per-step record a builder reads (our own shape)."""

from dataclasses import dataclass

import torch


@dataclass
class StepMetadata:
    num_reqs: int
    query_lens_cpu: torch.Tensor
    query_lens: torch.Tensor


class AttentionBackend:
    @staticmethod
    def get_builder_cls():
        raise NotImplementedError


class AttentionMetadataBuilder:
    def __init__(self, config, device):
        self.config = config
        self.device = device

    def build(self, common_prefix_len, step):
        raise NotImplementedError

"""The builder base and the per-step record it reads (a shape of our own)."""

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch


@dataclass
class CommonMetadata:
    num_reqs: int
    seq_lens_cpu: torch.Tensor
    slots: torch.Tensor


class AttentionMetadataBuilder(ABC):
    def __init__(self, config, device):
        self.config = config
        self.device = device

    @abstractmethod
    def build(self, common_prefix_len, common):
        raise NotImplementedError

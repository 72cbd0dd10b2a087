"""A V0-style runner of our own that samples through the layer sampler every step."""

import torch

from toyv0s.model_executor.layers.sampler import Sampler


class ToyModelRunner:
    def __init__(self) -> None:
        self.sampler = Sampler()

    def execute_model(self, logits: torch.Tensor, sampling_metadata) -> torch.Tensor:
        return self.sampler(logits, sampling_metadata)

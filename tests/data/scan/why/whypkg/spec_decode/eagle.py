"""Fixture: one drafter the factory can build."""

import torch


class EagleProposer:
    def __init__(self, device: torch.device) -> None:
        self.hidden = torch.zeros(8, device=device)

    def propose(self, sampled: torch.Tensor) -> list:
        return sampled.tolist()  # expect: blocking_readback speculation

"""Fixture: the other drafter the factory can build."""

import torch


class NgramProposer:
    def propose(self, sampled: torch.Tensor) -> torch.Tensor:
        lengths = torch.unique(sampled)  # expect: blocking_readback speculation
        return lengths

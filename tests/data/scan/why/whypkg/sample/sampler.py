"""Fixture: a sampler module (an nn.Module) the runner imports; the scan reaches forward()."""

import torch
from torch import nn


class SamplerOutput:
    def __init__(self, sampled_token_ids: torch.Tensor, num_nans: torch.Tensor) -> None:
        self.sampled_token_ids = sampled_token_ids
        self.num_nans = num_nans


class Sampler(nn.Module):
    def forward(self, logits: torch.Tensor) -> SamplerOutput:
        banned = logits[torch.isinf(logits)]  # expect: blocking_readback none
        greedy = logits.argmax(dim=-1) + sigma_table(logits)[0].long()
        if banned.numel():
            greedy = greedy.masked_fill(greedy < 0, 0)
        return SamplerOutput(greedy, torch.isnan(logits).sum(dim=-1))


_TABLE_CACHE: dict = {}


def sigma_table(logits: torch.Tensor) -> torch.Tensor:
    """Built once per device and kept: the copy runs on the first use, not per step."""
    table = _TABLE_CACHE.get(logits.device)
    if table is None:
        table = torch.tensor([0.5, 1.0, 2.0], device=logits.device)  # expect: blocking_copy warmup
        _TABLE_CACHE[logits.device] = table
    return table

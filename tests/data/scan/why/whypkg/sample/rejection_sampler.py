"""Fixture: the rejection sampler, called only with drafts."""

import torch
from torch import nn


class RejectionSampler(nn.Module):
    def forward(self, draft_ids: torch.Tensor, target_ids: torch.Tensor) -> torch.Tensor:
        accepted = draft_ids == target_ids
        first_rejected = accepted.logical_not().nonzero()  # expect: blocking_readback speculation
        return first_rejected

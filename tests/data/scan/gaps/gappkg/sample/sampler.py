"""Fixture: a sampler whose top-k/top-p op picks its implementation in ``__init__``
(``self.forward = self.forward_native``), and readbacks hidden in it and its helpers."""

import torch
from torch import nn


class TopKTopP(nn.Module):
    def __init__(self, use_kernel: bool) -> None:
        super().__init__()
        if use_kernel:
            self.forward = self.forward_kernel
        else:
            self.forward = self.forward_native

    def forward_native(self, logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return self._apply(logits, k, p)

    def forward_kernel(self, logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        if bool((k > 0).any()):  # expect: blocking_readback none readback
            return logits
        return self._apply(logits, k, p)

    def _apply(self, logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        if p is not None and k is not None and 1 <= int(k.max()) <= 1024:  # expect: blocking_readback none readback
            return logits
        top = max(k)  # expect: blocking_readback none readback
        return logits.clamp(max=top)


class GapSampler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.topk_topp = TopKTopP(use_kernel=False)

    def forward(self, logits: torch.Tensor, metadata) -> torch.Tensor:
        logits = self.topk_topp(logits, metadata.top_k, metadata.top_p)
        floor = _floor(logits.amax(dim=-1))
        return logits.argmax(dim=-1) + floor


def _floor(bound):
    """A helper whose parameter the caller fills with a device reduction."""
    return float(bound.min())  # expect: blocking_readback none readback

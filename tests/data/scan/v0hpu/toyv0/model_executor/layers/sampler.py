"""The layer sampler a V0 model calls from its ``sample``."""

import torch
from torch import nn


class Sampler(nn.Module):
    def _prepare(self, logits: torch.Tensor, sampling_metadata) -> None:
        self._first_max = logits[0].max().item()  # expect: blocking_readback none
        self._do_top_p_top_k = bool(sampling_metadata.top_ps)

    def forward(self, logits: torch.Tensor, sampling_metadata) -> torch.Tensor:
        self._prepare(logits, sampling_metadata)
        do_top_p_top_k = self._do_top_p_top_k
        if do_top_p_top_k:  # a request asks for top-p / top-k (a generation config does)
            cutoff = logits.max().item()  # expect: blocking_readback none
            logits = logits.clamp(max=cutoff)
        return logits.argmax(dim=-1)

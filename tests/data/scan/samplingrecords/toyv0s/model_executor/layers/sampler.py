"""The layer sampler: it reads the per-step sampling tensors its metadata module builds."""

import torch
from torch import nn

from toyv0s.model_executor.sampling_metadata import SamplingTensors


class Sampler(nn.Module):
    def _init_tensors(self, logits: torch.Tensor, sampling_metadata) -> None:
        (tensors, self._do_min_p) = SamplingTensors.from_metadata(
            sampling_metadata, logits.device)
        self._top_p = tensors.top_ps[0].item()  # expect: blocking_readback none
        self._longest = int(tensors.prompt_lens.max())  # host tensor: no readback
        self._tensors = tensors

    def forward(self, logits: torch.Tensor, sampling_metadata) -> torch.Tensor:
        self._init_tensors(logits, sampling_metadata)
        keep = logits.softmax(dim=-1) <= self._tensors.top_ps.unsqueeze(1)
        return logits.masked_fill(~keep, float("-inf")).argmax(dim=-1)

"""A talker stage of our own with the shapes of two false alarms of the second precision audit
(tests/data/scan/audit/flagged2.toml): advanced indexing by a list of device index tensors
(Gaudi's sampler ``get_logprobs``) and ``repeat_interleave`` by an ``int`` the constructor
stored (CosyVoice3's flow decoder); next to each, the real sync of the same shape."""

import torch
from torch import nn


class TalkerStage(nn.Module):
    def __init__(self, token_mel_ratio: int = 2) -> None:
        super().__init__()
        self.token_mel_ratio = token_mel_ratio
        self.counts = torch.ones(8, dtype=torch.long, device="cuda")

    def forward(self, logprobs: torch.Tensor) -> list:
        rows = torch.arange(logprobs.shape[0], device=logprobs.device)
        cols = logprobs.argmax(dim=-1)
        picked = logprobs[[rows, cols]]
        fixed = logprobs[:, [0, 2]]  # expect: blocking_copy none
        hidden = logprobs.softmax(dim=-1)
        mel = hidden.repeat_interleave(self.token_mel_ratio, dim=1)
        spread = hidden.repeat_interleave(self.counts, dim=0)  # expect: blocking_readback none
        return [picked, fixed, mel, spread]

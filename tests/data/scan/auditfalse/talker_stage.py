"""A talker stage of our own with the shapes of three false alarms of the second precision audit
(tests/data/scan/audit/flagged2.toml): advanced indexing by a list of device index tensors
(Gaudi's sampler ``get_logprobs``), ``repeat_interleave`` by an ``int`` the constructor
stored (CosyVoice3's flow decoder) and an upload under a type test that a tensor made just above
never takes (Qwen3-Omni's talker prefill); next to each, the real sync of the same shape."""

import torch
from torch import nn


class TalkerStage(nn.Module):
    def __init__(self, token_mel_ratio: int = 2) -> None:
        super().__init__()
        self.token_mel_ratio = token_mel_ratio
        self.counts = torch.ones(8, dtype=torch.long, device="cuda")
        self.prompt_ids = [1, 2, 3]

    def forward(self, logprobs: torch.Tensor) -> list:
        rows = torch.arange(logprobs.shape[0], device=logprobs.device)
        cols = logprobs.argmax(dim=-1)
        picked = logprobs[[rows, cols]]
        fixed = logprobs[:, [0, 2]]  # expect: blocking_copy none
        hidden = logprobs.softmax(dim=-1)
        mel = hidden.repeat_interleave(self.token_mel_ratio, dim=1)
        spread = hidden.repeat_interleave(self.counts, dim=0)  # expect: blocking_readback none
        embeds = torch.as_tensor(self.prompt_ids).to(dtype=torch.bfloat16)
        if not isinstance(embeds, torch.Tensor):
            embeds = torch.as_tensor(embeds, device=logprobs.device)  # expect: blocking_copy opt_in
        ids = self.prompt_ids
        if not isinstance(ids, torch.Tensor):
            ids = torch.as_tensor(ids, device=logprobs.device)  # expect: blocking_copy none
        return [picked, fixed, mel, spread, embeds, ids]

"""A runner of our own whose model indexes device logits with Python lists (vLLM-Omni's
Qwen3-Omni talker suppressing codec tokens, split 10): torch turns each list into a host index
tensor and uploads it from pageable memory before the write or the gather. Integer and slice
indices, a device index tensor (also one a subclass keeps where its base keeps a list) and a host
tensor indexed by a list upload nothing.
"""

import torch


class TalkerModel(torch.nn.Module):
    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.suppressed = self._suppressed_ids(vocab_size)
        self.keep = [0, 1, 2]
        self.keep_gpu = torch.tensor([0, 1, 2], device="cuda")

    def _suppressed_ids(self, vocab_size: int) -> list[int]:
        return [i for i in range(vocab_size - 1024, vocab_size) if i != vocab_size - 2]

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head(hidden)
        logits[:, self.suppressed] = -1e9  # expect: blocking_copy none
        rows = sorted({0, 1})
        picked = logits[rows]  # expect: blocking_copy none
        kept = logits[:, self.keep]  # expect: blocking_copy none
        on_device = logits[:, self.keep_gpu]
        host = torch.zeros(4, 4)
        host[:, self.suppressed[:4]] = 0.0
        return picked.sum() + kept + on_device + logits[:, 3] + logits[:, 1:]


class DeviceTalkerModel(TalkerModel):
    """Keeps its suppressed ids on the device: the base's list does not decide for it."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__(vocab_size)
        self.suppressed = torch.arange(vocab_size - 1024, vocab_size, device="cuda")

    def suppress(self, logits: torch.Tensor) -> torch.Tensor:
        logits[..., self.suppressed] = -1e9
        return logits


class SuppressModelRunner:
    def __init__(self) -> None:
        self.model = TalkerModel(4096)
        self.device_model = DeviceTalkerModel(4096)
        self.hidden = torch.zeros(4, 64, device="cuda")

    def execute_model(self, num_tokens: int) -> torch.Tensor:
        self.device_model.suppress(self.hidden[:num_tokens])
        return self.model.compute_logits(self.hidden[:num_tokens])

"""Per-step sampling tensors, built through alternate constructors (``cls(...)``): the
request options are gathered on the host, pinned, and sent to the device without blocking."""

from dataclasses import dataclass

import torch


@dataclass
class SamplingTensors:
    top_ps: torch.Tensor
    prompt_lens: torch.Tensor

    @classmethod
    def from_metadata(cls, sampling_metadata, device: torch.device) -> tuple["SamplingTensors", bool]:
        top_ps = [group.top_p for group in sampling_metadata.seq_groups]
        lens = [group.prompt_len for group in sampling_metadata.seq_groups]
        do_min_p = any(group.min_p > 0 for group in sampling_metadata.seq_groups)
        return cls.from_lists(top_ps, lens, device), do_min_p

    @classmethod
    def from_lists(cls, top_ps: list[float], lens: list[int], device: torch.device) -> "SamplingTensors":
        top_ps_t = torch.tensor(top_ps, device="cpu", dtype=torch.float32, pin_memory=True)
        lens_t = torch.tensor(lens, device="cpu", dtype=torch.int64)
        return cls(
            top_ps=top_ps_t.to(device=device, non_blocking=True),
            prompt_lens=lens_t,
        )

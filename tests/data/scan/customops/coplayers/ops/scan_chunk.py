"""A chunked scan of our own whose host loop reads the device lengths back."""

import torch


def scan_chunks(x: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
    total = cu_seqlens[-1].item()  # expect: blocking_readback none
    return x[:total].cumsum(0)

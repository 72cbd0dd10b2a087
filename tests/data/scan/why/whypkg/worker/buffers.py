"""Fixture: a staged buffer, a pinned host half and a device half."""

import torch


class StagedBuffer:
    def __init__(self, size: int, dtype: torch.dtype, device: torch.device) -> None:
        self.cpu = torch.zeros(size, dtype=dtype, pin_memory=True)
        self.gpu = torch.zeros(size, dtype=dtype, device=device)
        self.np = self.cpu.numpy()

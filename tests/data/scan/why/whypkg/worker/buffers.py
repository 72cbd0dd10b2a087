"""Fixture: a staged buffer, a pinned host half and a device half."""

import torch


class StagedBuffer:
    def __init__(self, size: int, dtype: torch.dtype, device: torch.device) -> None:
        self.cpu = torch.zeros(size, dtype=dtype, pin_memory=True)
        self.gpu = torch.zeros(size, dtype=dtype, device=device)
        self.np = self.cpu.numpy()


class HostScratch:
    """Another class with an attribute of the same name, allocated pinned: it says nothing
    about the runner's pageable ``token_ids_cpu``."""

    def __init__(self) -> None:
        self.token_ids_cpu = torch.zeros(64, dtype=torch.int64, pin_memory=True)

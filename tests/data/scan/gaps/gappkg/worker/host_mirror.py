"""Fixture: a host mirror of a device buffer that uploads only its dirty rows (a fallback for
when the device cannot read host memory directly)."""

import torch


class HostMirror:
    def __init__(self, rows: int, cols: int, device: torch.device) -> None:
        self.host = torch.zeros((rows, cols), dtype=torch.int32, device="cpu", pin_memory=True)
        self.dev = torch.zeros((rows, cols), dtype=torch.int32, device=device)
        self.device = device
        self.dirty: set[int] = set()

    def upload(self) -> torch.Tensor:
        if self.dirty:
            rows = sorted(self.dirty)
            # indexing with a list gathers into a new, pageable host tensor
            staged = self.host[rows].to(self.device, non_blocking=True)  # expect: blocking_copy none gather
            # and the list itself is uploaded to index the device buffer
            self.dev[rows] = staged  # expect: blocking_copy none index
            self.dirty.clear()
        # one dense row of the pinned buffer: an async DMA
        self.dev[0].copy_(self.host[0], non_blocking=True)
        return self.dev

"""Fixture: a plugin's module-level patch that replaces ``DeviceView`` with a class whose
``dev`` is a property uploading the rows written since the last read."""

import torch

import gappkg.worker.staging


class MirroredView:
    def __init__(self, rows: int, device: torch.device) -> None:
        self.host = torch.zeros(rows, dtype=torch.int32, device="cpu", pin_memory=True)
        self._dev = torch.zeros(rows, dtype=torch.int32, device=device)
        self.device = device
        self.written: set[int] = set()

    @property
    def dev(self) -> torch.Tensor:
        if self.written:
            rows = sorted(self.written)
            self._dev[rows] = self.host[rows].to(device=self.device, non_blocking=True)  # expect: blocking_copy none patched
            self.written.clear()
        return self._dev


gappkg.worker.staging.DeviceView = MirroredView

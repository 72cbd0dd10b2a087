"""Fixture for the scan's user-facing output (issue 17): two failing sites, one of them reached
from two entry points, and one site guarded by speculation. Written for syncgate's tests."""

import torch


class TinyModelRunner:
    def __init__(self) -> None:
        self.speculator = None
        self.sampled = torch.zeros(4, dtype=torch.int64, device="cuda")

    def execute_model(self, batch: object) -> None:
        self._bookkeeping()
        torch.cuda.synchronize()

    def sample_tokens(self, batch: object) -> list:
        ids = self._bookkeeping()
        if self.speculator is not None:
            self.sampled.tolist()
        return ids

    def _bookkeeping(self) -> list:
        return self.sampled.tolist()

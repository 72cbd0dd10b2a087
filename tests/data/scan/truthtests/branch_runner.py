"""A runner of our own that branches on device values.

``if mask.any():`` and ``while lens.sum() > 0:`` call ``__bool__`` on one element of a device
tensor: the host reads it back to decide. The same tests on host tensors are free. A boolean
mask a helper makes from its parameter sizes the helper's gather by the mask's count: a
readback where the caller passes a device tensor. So does a mask reduced along a dimension
(``codes.ne(pad).any(dim=-1)``: vLLM-Omni's MOSS-TTS talker, split 13). ``any()`` of identity
tests over device tensors (``any(t is not None for t in (...))``, vLLM-Gaudi's causal-conv op,
audit 11) reads nothing back: its items are Python bools; ``max()`` over the tensors does.
"""

import torch


class BranchModelRunner:
    def execute_model(self, n: int, lens_cpu: torch.Tensor) -> int:
        mask = torch.zeros(n, dtype=torch.bool, device="cuda")
        if mask.any():  # expect: blocking_readback none
            n += 1
        lens = torch.ones(n, device="cuda")
        while lens.sum() > 0:  # expect: blocking_readback none
            lens = lens - 1
        if not lens_cpu[-1]:
            n -= 1
        if lens_cpu.sum() > 3:
            n += 2
        self.picked = self._pick(lens_cpu, lens)
        codes = torch.ones(n, 4, dtype=torch.long, device="cuda")
        alive = codes.ne(0).any(dim=-1)  # a reduction of a mask along a dim is a mask
        self.alive = codes[alive]  # expect: blocking_readback none
        if any(t is not None for t in (mask, lens)):  # identity tests: Python bools
            n += 3
        return n + max(lens, mask)  # expect: blocking_readback none

    def _pick(self, values, lens):
        keep = lens > 0
        return values[keep]  # expect: blocking_readback none

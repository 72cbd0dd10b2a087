"""A runner of our own that stores through boolean masks (issue 20 item 1).

``x[mask] = v`` is an ``index_put_``: the mask becomes the indices of its true elements, whose
count the host reads back. CUDA's ``__setitem__`` keeps a Python number on the host and fills
it with ``masked_fill_`` instead, so a number stored through a mask waits only on other devices
(``# npu:`` lines); a device tensor stored through a mask waits everywhere.
"""

import torch


class StateCache:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.states = torch.zeros(16, 8, device=device)
        self.lens = torch.zeros(16, dtype=torch.int32, device=device)
        self.host_lens = torch.zeros(16, dtype=torch.int32)


class MaskModelRunner:
    def __init__(self, device: torch.device) -> None:
        self.cache = StateCache(device)
        self.states = torch.zeros(16, 8, device=device)
        self.lens = torch.zeros(16, dtype=torch.int32, device=device)
        self.host_lens = torch.zeros(16, dtype=torch.int32)

    def execute_model(self, scheduler_output) -> torch.Tensor:
        fresh = self.lens == 0
        initial = self.states[:8].contiguous()
        initial[~fresh[:8], ...] = 0  # npu: blocking_readback none
        self.states[fresh] = initial.mean(dim=0)  # expect: blocking_readback none
        self.states[:, self.lens > 3] = -1.0  # npu: blocking_readback none
        # the masked_fill_ the fix writes reads nothing, anywhere
        self.states.masked_fill_(fresh.unsqueeze(-1), 0)
        initial = initial * fresh[:8, None]
        # a host mask over a host tensor: no device involved
        self.host_lens[self.host_lens > 2] = 0
        # an integer index is no mask
        self.states[3, ...] = 0
        return initial

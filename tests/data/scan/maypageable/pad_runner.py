"""A runner of our own that pads its batch for a graph size before uploading the query starts.

On the padded path the host query starts are rebound to a ``torch.cat`` result, a new tensor in
pageable memory, so the ``non_blocking`` upload after the branch is synchronous there; the
padding entry is built next to them on the host (``.to(starts.device)`` of a host tensor stays
on the host).
"""

import torch


class PadModelRunner:
    def __init__(self, device: torch.device, max_reqs: int) -> None:
        self.device = device
        self.starts_host = torch.zeros(max_reqs + 1, dtype=torch.int32, pin_memory=True)
        self.lens_host = torch.zeros(max_reqs, dtype=torch.int32, pin_memory=True)

    def execute_model(self, n: int, padded_tokens: int) -> torch.Tensor:
        starts = self.starts_host[:n + 1]
        if padded_tokens > 0:
            pad = torch.tensor([int(starts[-1]) + padded_tokens]).to(starts.device)
            starts = torch.cat([starts, pad.to(starts.dtype)])
        query_start = starts.to(self.device, non_blocking=True)  # expect: blocking_copy none
        lens = self.lens_host[:n].to(self.device, non_blocking=True)
        return query_start.sum() + lens.sum() + len(starts[1:].tolist())

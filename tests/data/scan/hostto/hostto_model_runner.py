"""A runner of our own that builds a linear-attention prefill's chunk table every step."""

import torch
from chunk_index import chunk_table, chunk_table_pinned


class HostToModelRunner:
    def __init__(self) -> None:
        self.query_start_loc_cpu = torch.zeros(65, dtype=torch.int32, pin_memory=True)
        self.hidden = torch.zeros(64, 16, device="cuda")

    def execute_model(self, num_reqs: int) -> torch.Tensor:
        cu_cpu = self.query_start_loc_cpu[: num_reqs + 1]
        device = self.hidden.device
        table = chunk_table(cu_cpu, 64).to(device=device, non_blocking=True)  # expect: blocking_copy none
        starts = chunk_table_pinned(cu_cpu, 64).to(device=device, non_blocking=True)  # pinned source: may or may not be copied, not judged pageable
        return self.hidden[table[:, 1]] + starts.sum()

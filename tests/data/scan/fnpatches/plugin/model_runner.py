"""A runner of our own whose step calls the upstream op by the name it imported."""

import torch
from upstream.model_executor.ops import chunk_rule


class PatchedModelRunner:
    def __init__(self, device: torch.device, max_reqs: int) -> None:
        self.query_start_gpu = torch.zeros(max_reqs + 1, dtype=torch.int32, device=device)

    def execute_model(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return chunk_rule(x, self.query_start_gpu[:n + 1])

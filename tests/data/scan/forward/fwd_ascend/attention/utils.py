"""What the runner imports from the attention package (a record of the step's metadata)."""

from dataclasses import dataclass

import torch


@dataclass
class StepMetadata:
    num_reqs: int
    query_start_loc_cpu: torch.Tensor

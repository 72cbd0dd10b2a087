"""A runner of our own that checks the drafts' lengths on the device, then reads the staged counts
back: both fields hold the device tensor the runner allocates, whichever is judged first."""

import torch
from records import Drafts, stage


class CycleModelRunner:
    def __init__(self) -> None:
        self.device = torch.device("cuda")

    def execute_model(self, num_tokens: int) -> list:
        drafts = Drafts(lens=torch.zeros(num_tokens, device=self.device))
        if drafts.lens.any():  # expect: blocking_readback none
            num_tokens += 1
        staged = stage(drafts)
        return staged.counts.tolist()  # expect: blocking_readback none

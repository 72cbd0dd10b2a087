"""Guard polarity (vllm-ascend #2788 shape): a guard means "runs only when X is on"."""

import torch


class PolarityModelRunner:
    def __init__(self) -> None:
        self.use_async_scheduling = False
        self.rejection_sampler = None

    def execute_model(self, sampled: torch.Tensor) -> list:
        if not self.use_async_scheduling:
            max_gen_len = sampled.shape[-1]
            if max_gen_len == 1:
                ids = sampled.tolist()  # expect: blocking_readback none
            else:
                ids = sampled.cpu()  # expect: blocking_readback speculation
                ids.resize_(0)
        else:
            ids = sampled.cpu()  # expect: blocking_readback async_scheduling
        if self.use_async_scheduling:
            pass
        else:
            sampled.item()  # expect: blocking_readback none
        return ids

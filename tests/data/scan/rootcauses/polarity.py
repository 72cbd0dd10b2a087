"""Guard polarity (vllm-ascend #2788 shape): a guard means "runs only when X is on"."""

import torch


class Batch:
    """Holds the previous step's async copy; the runner hands it over in async mode only."""

    def __init__(self) -> None:
        self.ready_event = None

    def set_async(self, ready_event) -> None:
        self.ready_event = ready_event

    def wait(self) -> None:
        if self.ready_event is None:
            return
        self.ready_event.synchronize()  # expect: event_sync async_scheduling


class PolarityModelRunner:
    def __init__(self) -> None:
        self.use_async_scheduling = False
        self.rejection_sampler = None
        self.batch = Batch()

    def execute_model(self, sampled: torch.Tensor) -> list:
        self.batch.wait()
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
        if not self.use_async_scheduling:
            return ids
        self.batch.set_async(torch.cuda.Event())
        return ids

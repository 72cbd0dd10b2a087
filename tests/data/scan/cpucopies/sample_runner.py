"""A sampler of our own that draws its noise on the host and uploads it (issue 20 item 1).

``x.cpu()`` of a device tensor is a new tensor in pageable memory, so uploading it again blocks
(``non_blocking`` or not); a name rebound to its own upload (``q = q.npu()``) keeps the pin of
its host copy.
"""

import torch


def _fill_noise(noise: torch.Tensor) -> None:
    noise.exponential_()


def _sample_rebound(probs: torch.Tensor) -> torch.Tensor:
    q = torch.empty_like(probs).cpu()
    _fill_noise(q)
    q = q.npu()  # expect: blocking_copy none
    return probs.div_(q).argmax(dim=-1)


def _sample_renamed(probs: torch.Tensor) -> torch.Tensor:
    noise = probs.to("cpu")
    _fill_noise(noise)
    q = noise.to(probs.device, non_blocking=True)  # expect: blocking_copy none
    return probs.div_(q).argmax(dim=-1)


def _sample_untyped(probs):
    # nothing in the helper says where probs lives: its caller passes a device tensor
    noise = probs.cpu()
    _fill_noise(noise)
    q = noise.to(probs.device, non_blocking=True)  # expect: blocking_copy none
    return probs.div_(q).argmax(dim=-1)


def _sample_local(device: torch.device) -> torch.Tensor:
    noise = torch.empty(8, 32, device=device).cpu()
    _fill_noise(noise)
    return noise.to(device, non_blocking=True)  # expect: blocking_copy none


def _sample_pinned(probs: torch.Tensor, staging) -> torch.Tensor:
    # the caller's buffer is pinned host memory: .cpu() of it is itself, the upload asynchronous
    noise = staging.cpu()
    _fill_noise(noise)
    q = noise.to(probs.device, non_blocking=True)
    return probs.div_(q).argmax(dim=-1)


class NoiseModelRunner:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.probs = torch.zeros(8, 32, device=device)
        self.staging = torch.zeros(8, 32, pin_memory=True)

    def execute_model(self, scheduler_output) -> tuple[torch.Tensor, ...]:
        return (_sample_rebound(self.probs), _sample_renamed(self.probs),
                _sample_untyped(self.probs), _sample_local(self.device),
                _sample_pinned(self.probs, self.staging))

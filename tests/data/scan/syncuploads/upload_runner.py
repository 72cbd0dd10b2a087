"""A runner of our own whose builder uploads host metadata every step (issue 20 item 1).

A host-to-device copy without ``non_blocking=True`` returns only when the copy is done, so the
host waits for the stream ahead of it too, pinned memory or not; queued with
``non_blocking=True`` from pinned memory it is free. ``x.to(t.device)`` of a host ``t`` is no
upload at all.
"""

from dataclasses import dataclass

import torch


@dataclass
class StepMeta:
    query_start: torch.Tensor
    computed_cpu: torch.Tensor
    lens_cpu: torch.Tensor


class UploadModelRunner:
    def __init__(self, device: torch.device, max_reqs: int) -> None:
        self.device = device
        self.computed_host = torch.zeros(max_reqs, dtype=torch.int32, pin_memory=True)
        self.lens_host = torch.zeros(max_reqs, dtype=torch.int32, pin_memory=True)
        self.starts_gpu = torch.zeros(max_reqs + 1, dtype=torch.int32, device=device)
        self.lens_gpu = torch.zeros(max_reqs, dtype=torch.int32, device=device)

    def execute_model(self, n: int) -> torch.Tensor:
        meta = StepMeta(query_start=self.starts_gpu[:n + 1], computed_cpu=self.computed_host[:n],
                        lens_cpu=self.lens_host[:n])
        self.lens_gpu[:n].copy_(self.lens_host[:n])  # expect: blocking_copy none
        queued = self.lens_host[:n].to(self.device, non_blocking=True)
        return self._build(meta) + queued + self._on_host(meta, self.lens_host[:n])

    def _build(self, meta: StepMeta) -> torch.Tensor:
        # a field the runner filled from a pinned buffer: still a synchronous copy
        context = meta.computed_cpu.to(meta.query_start.device)  # expect: blocking_copy none
        lens = meta.lens_cpu.cuda()  # expect: blocking_copy none
        return context + lens

    def _on_host(self, meta: StepMeta, like: torch.Tensor) -> torch.Tensor:
        # every caller passes a host tensor as ``like``: host to host, no copy to wait for
        return meta.computed_cpu.to(like.device)

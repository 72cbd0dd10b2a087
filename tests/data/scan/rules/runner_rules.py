"""Fixture: one positive and one negative case per scan rule, reached from execute_model."""

from contextlib import contextmanager
from functools import partial

import numpy as np
import torch

from .runner_base import RunnerBase


@contextmanager
def gpu_sync_allowed():
    yield


def first_ids(batch) -> list:  # nothing says where batch lives
    return batch.ids.tolist()  # expect: blocking_readback unknown_residence


class StagingHelper:
    """An object the runner builds: calls on it are followed."""

    def __init__(self) -> None:
        self.done = torch.cuda.Event()

    def flush(self) -> None:
        self.done.synchronize()  # expect: event_sync none

    def __call__(self, sampled: torch.Tensor) -> list:
        return sampled.tolist()  # expect: blocking_readback none

    def idle(self) -> None:
        torch.cuda.synchronize()


class RulesModelRunner(RunnerBase):
    def __init__(self, device: torch.device, num_spec_tokens: int) -> None:
        self.device = device
        self.num_spec_tokens = num_spec_tokens
        self.speculator = None
        self.use_async_scheduling = True
        self.transfer_event = torch.cuda.Event()
        self.copy_stream = torch.cuda.Stream()
        self.ids_pinned_cpu = torch.empty((8, 1), dtype=torch.int64, pin_memory=True)
        self.ids_pageable = torch.empty((8, 1), dtype=torch.int64, pin_memory=False)
        self.counts = torch.zeros(8, device=device)
        self.helper = StagingHelper()
        self.prepare_event = None
        if self.use_async_scheduling:
            self.prepare_event = torch.cuda.Event()

    def step_rules(self, sampled: torch.Tensor) -> None:
        self.device_rules()
        self.readback_rules(sampled, np.arange(4))
        self.copy_rules(sampled)
        self.guard_rules(sampled)
        self.profile_run(sampled)
        first_ids(self.helper)
        if self.is_pooling_model:
            sampled.cpu()  # expect: blocking_readback opt_in
        self.helper.flush()
        run = partial(self.helper, sampled)
        run()

    def device_rules(self) -> None:
        torch.cuda.synchronize()  # expect: device_sync none
        torch.accelerator.synchronize()  # expect: device_sync none
        torch.npu.synchronize()  # expect: device_sync none
        self.copy_stream.synchronize()  # expect: stream_sync none
        torch.cuda.current_stream().synchronize()  # expect: stream_sync none
        self.transfer_event.synchronize()  # expect: event_sync none
        self.transfer_event.record()
        self.copy_stream.wait_stream(torch.cuda.current_stream())

    def readback_rules(self, sampled: torch.Tensor, positions_np: np.ndarray) -> None:
        sampled.tolist()  # expect: blocking_readback none
        self.counts[0].item()  # expect: blocking_readback none
        host = sampled.cpu()  # expect: blocking_readback none
        host.tolist()
        host.numpy()
        int(self.counts[0])  # expect: blocking_readback none
        bool(self.counts.any())  # expect: blocking_readback none
        float(sampled.sum())  # expect: blocking_readback none
        positions_np.tolist()
        self.ids_pinned_cpu.tolist()
        cu_num_tokens = np.cumsum(positions_np)
        cu_num_tokens[-1].item()
        num_reqs = len(positions_np)
        int(num_reqs)
        int(sampled.shape[0])
        for i in range(num_reqs):
            int(i)
        async_copy = sampled.to("cpu", non_blocking=True)
        async_copy.numpy()

    def copy_rules(self, sampled: torch.Tensor) -> None:
        sampled.to("cpu")  # expect: blocking_copy none
        sampled.to("cpu", non_blocking=True)
        self.ids_pinned_cpu.copy_(sampled)  # expect: blocking_copy none
        self.ids_pinned_cpu[: sampled.shape[0]].copy_(sampled, non_blocking=True)
        self.ids_pageable.copy_(sampled, non_blocking=True)  # expect: blocking_copy none
        staging = torch.empty(8, dtype=torch.int64)
        staging.copy_(sampled, non_blocking=True)  # expect: blocking_copy none
        pinned = torch.empty(8, dtype=torch.int64, pin_memory=True)
        pinned.copy_(sampled, non_blocking=True)
        self.counts.copy_(self.ids_pinned_cpu[:, 0], non_blocking=True)
        staging.copy_(self.ids_pinned_cpu[:, 0])

    def guard_rules(self, sampled: torch.Tensor) -> None:
        if self.speculator is not None:
            self.transfer_event.synchronize()  # expect: event_sync speculation
        if self.num_spec_tokens > 0:
            sampled.tolist()  # expect: blocking_readback speculation
        drafts = sampled.tolist() if self.speculator else []  # expect: blocking_readback speculation
        if not self.use_async_scheduling:
            sampled.tolist()  # expect: blocking_readback none
        else:
            sampled.cpu()  # expect: blocking_readback async_scheduling
        if self.prepare_event is not None:
            self.prepare_event.synchronize()  # expect: event_sync async_scheduling
        with gpu_sync_allowed():
            sampled.item()  # expect: blocking_readback none
        needs_wait = self.speculator is not None and not self.use_async_scheduling
        if needs_wait:
            self.copy_stream.synchronize()  # expect: stream_sync speculation
        self._spec_only(sampled)
        del drafts

    def _spec_only(self, sampled: torch.Tensor) -> None:
        if self.speculator is None:
            return
        sampled.tolist()  # expect: blocking_readback speculation

    def profile_run(self, sampled: torch.Tensor) -> None:
        torch.cuda.synchronize()  # expect: device_sync warmup

    def _post(self, sampled: torch.Tensor) -> None:
        self.ids_pinned_cpu.tolist()

    def unreachable(self, sampled: torch.Tensor) -> None:
        sampled.tolist()

"""Fixture (issue 20): the sync shapes that upstream developers removed, in a runner of our own.

Only the worker package is named on the command line; the sampler, rejection sampler and
drafters are found through its imports. Every ``# expect:`` line was missed (or mis-judged) by
the scan before issue 20.
"""

from contextlib import contextmanager

import numpy as np
import torch

from whypkg.sample.rejection_sampler import RejectionSampler
from whypkg.sample.sampler import Sampler
from whypkg.spec_decode.eagle import EagleProposer
from whypkg.spec_decode.ngram import NgramProposer
from whypkg.worker.buffers import StagedBuffer


@contextmanager
def gpu_sync_allowed():
    yield


class WhyModelRunner:
    def __init__(self, vllm_config, device: torch.device) -> None:
        self.device = device
        self.model_config = vllm_config.model_config
        self.speculative_config = vllm_config.speculative_config
        self.model = None
        self.sampler = Sampler()
        self.rejection_sampler = RejectionSampler()
        if self.speculative_config:
            self.drafter = self._get_drafter()
        self.input_ids = StagedBuffer(64, torch.int32, device)
        self.slot_mapping_pageable = torch.zeros(64, dtype=torch.int64)
        self.slot_mapping_gpu = torch.zeros(64, dtype=torch.int64, device=device)
        self.positions_pinned = torch.zeros(64, dtype=torch.int32, pin_memory=True)
        self.positions_gpu = torch.zeros(64, dtype=torch.int64, device=device)
        self.block_table_pinned = torch.zeros((8, 64), dtype=torch.int32, pin_memory=True)
        self.block_table_gpu = torch.zeros((8, 64), dtype=torch.int32, device=device)
        self.sampled_pinned = torch.zeros(64, dtype=torch.int64, pin_memory=True)
        self.token_ids_cpu = torch.zeros(64, dtype=torch.int64)  # pageable, unlike HostScratch's
        self.token_ids_gpu = torch.zeros(64, dtype=torch.int64, device=device)
        self.transfer_event = torch.cuda.Event()
        self.routed_event = (
            torch.cuda.Event() if self.model_config.enable_return_routed_experts else None
        )

    def _get_drafter(self):
        if self.speculative_config.method == "ngram":
            return NgramProposer()
        drafter = EagleProposer(self.device)
        return drafter

    def execute_model(self, scheduler_output) -> None:
        n = scheduler_output.total_num_scheduled_tokens
        # pageable host memory: non_blocking=True does not help
        self.slot_mapping_gpu[:n].copy_(self.slot_mapping_pageable[:n], non_blocking=True)  # expect: blocking_copy none
        req_indices = np.repeat(np.arange(8), 8)
        req_gpu = torch.from_numpy(req_indices).to(self.device, non_blocking=True)  # expect: blocking_copy none
        # host data built on the device in one call
        lens = torch.tensor(scheduler_output.num_tokens_list, device=self.device)  # expect: blocking_copy none
        # a pinned source, but the copy converts int32 -> int64
        self.positions_gpu[:n].copy_(self.positions_pinned[:n], non_blocking=True)  # expect: blocking_copy none
        # a pinned source, but a strided slice of it
        self.block_table_gpu[:, :n].copy_(self.block_table_pinned[:, :n], non_blocking=True)  # expect: blocking_copy none
        # the correct forms: dense slices of pinned buffers, same dtype
        self.input_ids.gpu[:n].copy_(self.input_ids.cpu[:n], non_blocking=True)
        self.block_table_gpu[0, :n].copy_(self.block_table_pinned[0, :n], non_blocking=True)
        self.token_ids_gpu[:n].copy_(self.token_ids_cpu[:n], non_blocking=True)  # expect: blocking_copy none
        torch.repeat_interleave(req_gpu, lens, output_size=n)
        # data-dependent shapes
        starts = torch.repeat_interleave(req_gpu, lens)  # expect: blocking_readback none
        live = lens[lens > 0]  # expect: blocking_readback none
        hidden = self.model(req_gpu, starts, live)
        logits = self.model.compute_logits(hidden)
        sampler_output = self.sampler(logits)
        self._bookkeeping(sampler_output, n)
        self._copy_out(n)
        if self.speculative_config:
            drafts = self.drafter.propose(sampler_output.sampled_token_ids)
            self.rejection_sampler(drafts, sampler_output.sampled_token_ids)
        if self.model_config.enable_return_routed_experts:
            hidden.cpu()  # expect: blocking_readback opt_in
        if self.routed_event is not None:
            self.routed_event.synchronize()  # expect: event_sync opt_in

    def _bookkeeping(self, sampler_output, n: int) -> None:
        # residence by dataflow: a device slice passed to a parameter named *_cpu
        self._num_tokens(self.input_ids.gpu[:n])
        with gpu_sync_allowed():
            sampled = self._to_list(sampler_output.sampled_token_ids)
            sampler_output.num_nans.tolist()  # expect: blocking_readback none
        self._count(sampler_output.num_nans)
        del sampled

    def _num_tokens(self, token_ids_cpu) -> list:
        return token_ids_cpu.tolist()  # expect: blocking_readback none

    def _count(self, values) -> int:
        return values.sum().item()  # expect: blocking_readback none

    def _to_list(self, sampled: torch.Tensor) -> list:
        pinned = self.sampled_pinned[: sampled.shape[0]]
        pinned.copy_(sampled, non_blocking=True)
        self.transfer_event.record()
        self.transfer_event.synchronize()  # expect: event_sync none
        return pinned.tolist()

    def _copy_out(self, n: int) -> None:
        """Device-to-host copies that look asynchronous and are not."""
        self.positions_pinned[:n].copy_(self.positions_gpu[:n], non_blocking=True)  # expect: blocking_copy none
        self.block_table_pinned[:, :n].copy_(self.block_table_gpu[:, :n], non_blocking=True)  # expect: blocking_copy none
        self.sampled_pinned[:n].copy_(self.positions_gpu[:n], non_blocking=True)

"""Fixture (issue 20): the default-path syncs the scan missed on the first held-out split,
and the mode guards it misjudged, in shapes of our own.

Only the worker package is named on the command line; the sampler is found through its imports.
Each marked line (``expect:`` kind, guard, rule family) names the family that must report it.
"""

import numpy as np
import torch
from vllm.config import CUDAGraphMode

from gappkg.sample.sampler import GapSampler
from gappkg.worker.block_table import GapInputBatch
from gappkg.worker.host_mirror import HostMirror
from gappkg.worker.staging import ViewPool


class GapModelRunner:
    def __init__(self, vllm_config, device: torch.device) -> None:
        self.device = device
        self.model_config = vllm_config.model_config
        self.compilation_config = vllm_config.compilation_config
        self.cache_config = vllm_config.cache_config
        self.model = None
        self.sampler = GapSampler()
        self.input_batch = GapInputBatch([64, 64], device)
        self.mirror = HostMirror(8, 64, device)
        self.lengths = ViewPool(64, device)

    @staticmethod
    def make_mask(dtype, mask_device, seq_lens: list[int]) -> torch.Tensor:
        """A mask built on the host with numpy, every step."""
        width = max(seq_lens, default=0)
        mask = np.zeros((len(seq_lens), width), dtype=np.float16)
        for row, length in enumerate(seq_lens):
            mask[row, length:] = -10000
        return torch.from_numpy(mask).to(dtype).to(mask_device)  # expect: blocking_copy none mask

    @staticmethod
    def chunk_bounds(seq_lens: list[int], device) -> tuple[torch.Tensor, torch.Tensor]:
        """Bounds made by torch ops on host tensors: new tensors in pageable memory, so
        non_blocking does not keep their uploads from blocking."""
        lens = torch.tensor(seq_lens, dtype=torch.int32)
        bounds_cpu = torch.cat([torch.zeros(1, dtype=torch.int32), lens.cumsum(0)])
        bounds = bounds_cpu.to(device, non_blocking=True)  # expect: blocking_copy none hostop
        offsets = torch.arange(len(seq_lens), dtype=torch.int32) * 16
        return bounds, offsets.to(device, non_blocking=True)  # expect: blocking_copy none hostop

    def execute_model(self, scheduler_output) -> None:
        n = scheduler_output.total_num_scheduled_tokens
        self.input_batch.block_table.commit_slot_mapping(n)
        positions = self.input_batch.block_table.positions_to_device(None, self.device)
        mask = self.make_mask(self.model_config.dtype, self.device, scheduler_output.seq_lens)
        table = self.mirror.upload()
        lengths = self.lengths.publish(scheduler_output.seq_lens)
        bounds, chunk_offsets = self.chunk_bounds(scheduler_output.seq_lens, self.device)
        hidden = self.model(positions, mask, table, lengths, bounds, chunk_offsets)
        logits = self.model.compute_logits(hidden)
        sampled = self.sampler(logits, scheduler_output.sampling_metadata)
        self._after_forward(hidden, sampled)

    def _after_forward(self, hidden: torch.Tensor, sampled: torch.Tensor) -> None:
        # graph mode of the config: FULL_AND_PIECEWISE unless a user picks another
        if self.compilation_config.cudagraph_mode == CUDAGraphMode.PIECEWISE:
            torch.cuda.current_stream().synchronize()  # expect: stream_sync opt_in graph
        if self.compilation_config.cudagraph_mode != CUDAGraphMode.NONE:
            sampled.tolist()  # expect: blocking_readback none graph
        # opt-in switches whose default is no bool: a Literal "none", an int 0
        if self.cache_config.mamba_cache_mode != "none":
            hidden.cpu()  # expect: blocking_readback opt_in switch
        if self.compilation_config.encoder_cudagraph_max_vision_items_per_batch > 0:
            torch.cuda.synchronize()  # expect: device_sync opt_in switch

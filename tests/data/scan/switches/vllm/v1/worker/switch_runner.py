"""A runner whose shared-prefix path runs only when the release's config turns it on, and
whose step trace runs only when a user sets the variable the release's ``envs.py`` leaves
unset."""

import torch

import vllm.envs as envs


class SwitchModelRunner:
    def __init__(self, vllm_config, device):
        self.device = device
        self.cascade_attn_enabled = not vllm_config.model_config.disable_cascade_attn
        self.dcp_world_size = vllm_config.parallel_config.decode_context_parallel_size

    def execute_model(self, batch):
        common_prefix_len = 0
        if self.cascade_attn_enabled:
            common_prefix_len = batch.shared_prefix_len
        return self.build_metadata(common_prefix_len, batch)

    def build_metadata(self, common_prefix_len: int, batch):
        use_cascade = common_prefix_len > 0
        prefix = None
        if use_cascade:
            prefix = torch.tensor([0, batch.num_tokens], dtype=torch.int32, device=self.device)  # expect: blocking_copy opt_in cascade
        shard_lens = batch.dcp_local_seq_lens  # None unless decode context parallel is on
        local_lens = None
        if shard_lens is not None:
            local_lens = torch.tensor(batch.dcp_rank, device=self.device)  # expect: blocking_copy opt_in dcp
        max_decode_len = batch.max_decode_len
        if max_decode_len > 1:
            counts = batch.decode_lens_gpu
            prefix = torch.repeat_interleave(counts, counts)  # expect: blocking_readback speculation spec
        return prefix, local_lens, self._trace(batch)

    def _trace(self, batch):
        steps = envs.VLLM_TRACE_STEPS
        if not steps:
            return None
        return int(batch.decode_lens_gpu.max().item())  # expect: blocking_readback opt_in trace

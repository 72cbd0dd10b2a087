"""A runner whose attention takes a shared-prefix path when its builder found a common prefix."""

import torch


class PrefixModelRunner:
    def __init__(self, vllm_config, device):
        self.device = device
        self.dcp_world_size = vllm_config.parallel_config.decode_context_parallel_size
        self.cascade_attn_enabled = not vllm_config.model_config.disable_cascade_attn

    def execute_model(self, batch):
        common_prefix_len = batch.shared_prefix_len if self.cascade_attn_enabled else 0
        return self.attend(batch, use_cascade=common_prefix_len > 0)

    def attend(self, batch, use_cascade: bool):
        if not use_cascade:
            if self.dcp_world_size > 1:
                out = batch.query * 2
                return out
            else:
                out = batch.query + 1
                return out
        # only a step with a shared prefix gets here: both branches above return
        bounds = torch.tensor([0, batch.num_tokens], dtype=torch.int32, device=self.device)  # expect: blocking_copy opt_in
        return batch.query + bounds.sum()

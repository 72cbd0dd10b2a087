"""A plugin's subclass of a model layer it registers in the layer's place (our shape of an
out-of-tree layer registration): the unscanned base's forward calls its _forward_core."""

import torch
from vllm.model_executor.layers.mamba.gated_delta import GatedDeltaNetAttention


class AscendGatedDeltaNetAttention(GatedDeltaNetAttention):
    def __init__(self, config, device):
        super().__init__(config)
        self.conv_buf = torch.zeros(config.max_num_reqs, config.conv_width, device=device)

    def _forward_core(self, mixed_qkv):
        n = mixed_qkv.shape[0]
        self.per_kv = self.num_heads // self.num_kv_heads
        if (repeats := self.per_kv) > 1:
            # an int repeats held in a name sizes the output: no readback
            mixed_qkv = mixed_qkv + torch.repeat_interleave(self.conv_buf, repeats, dim=0)  # int repeats
        mixed_qkv = mixed_qkv + self._expand(self.conv_buf, self.per_kv)
        return mixed_qkv * int(self.conv_buf[:n].sum())  # expect: blocking_readback none layer

    def _expand(self, states, times: int):
        # a parameter annotated int sizes the output: no readback
        return states.repeat_interleave(times, dim=0)  # int-annotated repeats

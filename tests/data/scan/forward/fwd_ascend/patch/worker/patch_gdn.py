"""A plugin's patch of a model layer it does not own: the model's own forward runs the
installed _forward_core every step (our own shape of a gated-delta-net layer)."""

import torch
from torch import nn
from vllm.model_executor.models.qwen_next import QwenNextGatedDeltaNet

from fwd_ascend.ops.triton.chunk import chunk_delta


class AscendGatedDeltaNet(nn.Module):
    """Holds the replacement methods only; the patch below installs them on the model's layer."""

    def __init__(self, config, device):
        super().__init__()
        self.cu_seqlens_buf = torch.zeros(config.max_num_reqs + 1, dtype=torch.int32,
                                          device=device)
        self.state_buf = torch.zeros(config.max_num_reqs, config.state_size, device=device)

    def _forward_core(self, mixed_qkv, spec_sequence_masks=None):
        n = mixed_qkv.shape[0]
        state = self.state_buf[:n]
        lengths = state.sum(dim=-1).max().item()  # expect: blocking_readback none patch
        out = chunk_delta(mixed_qkv, self.cu_seqlens_buf[: n + 1])
        if spec_sequence_masks is not None:
            accepted = state.nonzero()  # expect: blocking_readback speculation patch
            out = out[0][accepted]
        return out, lengths

    def get_state_dtype(self):
        # not per-step code: only the forward methods a patch installs are roots
        return self.state_buf.cpu().dtype


QwenNextGatedDeltaNet._forward_core = AscendGatedDeltaNet._forward_core
QwenNextGatedDeltaNet.get_state_dtype = AscendGatedDeltaNet.get_state_dtype

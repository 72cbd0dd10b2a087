"""An out-of-tree op (a CustomOp subclass the plugin registers): the device runs the method the
budget's dispatch names: forward_oot on an NPU, forward_cuda on CUDA."""

import torch
from vllm.model_executor.layers.layernorm import RMSNorm


class AscendRMSNorm(RMSNorm):
    def __init__(self, hidden_size, eps=1e-6, dp_size=1):
        super().__init__(hidden_size, eps)
        self.dp_size = dp_size

    def forward_oot(self, x, residual=None):
        if self.dp_size != 1:
            torch.npu.synchronize()  # expect: device_sync opt_in op
        scale = torch.from_numpy(self.scale_np).to(x.device)  # expect: blocking_copy none op
        return x * scale

    def forward_cuda(self, x, residual=None):
        torch.cuda.synchronize()  # expect: device_sync none cuda_op
        return x

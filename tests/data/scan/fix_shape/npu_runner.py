"""Fixture in the shape of vllm-ascend PR #13382's fix (written for syncgate, not copied): the
D2H copy of num_computed_tokens and the event wait happen only when a speculator exists;
without one the host uses the scheduler's CPU mirror."""

import torch
from upstream_runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def __init__(self, max_num_reqs: int, device: torch.device, speculative_config: object) -> None:
        super().__init__(max_num_reqs, device)
        self.num_computed_tokens_event = torch.npu.Event()
        self.num_computed_tokens_stream = torch.npu.Stream()
        self.num_computed_tokens_cpu = torch.zeros(
            max_num_reqs, dtype=torch.int32, device="cpu", pin_memory=True
        )
        if speculative_config is not None:
            self.speculator = object()

    def postprocess_sampled(self, sampled: torch.Tensor) -> None:
        super().postprocess_sampled(sampled)
        if self.speculator is not None:
            self._copy_num_computed_tokens_to_cpu()

    def _copy_num_computed_tokens_to_cpu(self) -> None:
        with torch.npu.stream(self.num_computed_tokens_stream):
            self.num_computed_tokens_stream.wait_stream(torch.npu.current_stream())
            self.num_computed_tokens_cpu.copy_(
                self.req_states.num_computed_tokens_gpu, non_blocking=True
            )
            self.num_computed_tokens_event.record()

    def prepare_inputs(self, scheduler_output: dict, req_ids: list[str]) -> None:
        self._update_seq_lens_cpu(scheduler_output, req_ids)
        super().prepare_inputs(scheduler_output, req_ids)

    def _update_seq_lens_cpu(self, scheduler_output: dict, req_ids: list[str]) -> None:
        if self.speculator is not None:
            self.num_computed_tokens_event.synchronize()
            computed = self.num_computed_tokens_cpu
        else:
            computed = torch.from_numpy(self.req_states.num_computed_tokens_np)
        for i, req_id in enumerate(req_ids):
            index = scheduler_output["req_index"][req_id]
            self.seq_lens_cpu[i] = computed[index] + scheduler_output["num_scheduled"][req_id]

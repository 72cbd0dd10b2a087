"""Fixture in the shape of vLLM's Model Runner V2 (written for syncgate, not copied): the step
keeps num_computed_tokens on the device and gives the host an optimistic CPU mirror."""

import numpy as np
import torch


class RequestStates:
    def __init__(self, max_num_reqs: int, device: torch.device) -> None:
        self.num_computed_tokens_gpu = torch.zeros(max_num_reqs, dtype=torch.int32, device=device)
        self.num_computed_tokens_np = np.zeros(max_num_reqs, dtype=np.int32)


class StepOutput:
    """Starts the D2H copy on a side stream; the host waits later, off the step loop."""

    def __init__(self, sampled: torch.Tensor, copy_stream: torch.cuda.Stream) -> None:
        self.copy_event = torch.cuda.Event()
        with torch.cuda.stream(copy_stream):
            copy_stream.wait_stream(torch.cuda.current_stream())
            self.sampled_np = sampled.to("cpu", non_blocking=True).numpy()
            self.copy_event.record()


class GPUModelRunner:
    def __init__(self, max_num_reqs: int, device: torch.device) -> None:
        self.device = device
        self.req_states = RequestStates(max_num_reqs, device)
        self.seq_lens_cpu = torch.zeros(max_num_reqs, dtype=torch.int32, pin_memory=True)
        self.output_copy_stream = torch.cuda.Stream()
        self.speculator = None

    def execute_model(self, scheduler_output: dict) -> None:
        self.update_requests(scheduler_output)
        self.prepare_inputs(scheduler_output, list(scheduler_output["req_ids"]))

    def update_requests(self, scheduler_output: dict) -> None:
        for index, computed in scheduler_output["num_computed_tokens"].items():
            self.req_states.num_computed_tokens_np[index] = computed

    def prepare_inputs(self, scheduler_output: dict, req_ids: list[str]) -> None:
        num_reqs = len(req_ids)
        self.seq_lens_cpu[:num_reqs] = 0

    def sample_tokens(self, logits: torch.Tensor) -> StepOutput:
        sampled = logits.argmax(dim=-1)
        output = StepOutput(sampled, self.output_copy_stream)
        self.postprocess_sampled(sampled)
        return output

    def postprocess_sampled(self, sampled: torch.Tensor) -> None:
        self.req_states.num_computed_tokens_gpu += 1

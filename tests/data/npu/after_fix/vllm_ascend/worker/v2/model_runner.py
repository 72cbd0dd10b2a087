"""syncgate fixture: a V2 NPU runner written in the shape of vllm-ascend PR #13382 (the fix).

This is not upstream code. It keeps upstream's class, method and attribute names and signatures,
so the harness loads it exactly as it loads a real vllm-ascend tree; its bodies are syncgate's own,
written from the behaviour the PR describes: without a speculator, the device count of computed
tokens never differs from the scheduler's, so neither the device-to-host copy nor the wait is
needed. The two per-request loops are kept on purpose: this file is also the loop-version
reference that ``vllm_syncgate.npu.update_seq_lens_cpu`` is proven equal to.
"""

import torch
from vllm.v1.worker.gpu.model_runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def postprocess_sampled(
        self,
        idx_mapping,
        sampled_tokens,
        num_sampled,
        num_rejected,
        query_start_loc=None,
    ):
        super().postprocess_sampled(
            idx_mapping, sampled_tokens, num_sampled, num_rejected, query_start_loc
        )
        # Rejected drafts are the only way the device count can drift from the scheduler's.
        if self.speculator is not None:
            self._copy_num_computed_tokens_to_cpu()

    def _copy_num_computed_tokens_to_cpu(self):
        side_stream = self.num_computed_tokens_stream
        main_stream = torch.cuda.current_stream()
        with torch.npu.stream(side_stream):
            side_stream.wait_stream(main_stream)
            self.num_computed_tokens_cpu.copy_(
                self.req_states.num_computed_tokens.gpu, non_blocking=True
            )
            self.num_computed_tokens_event.record()

    def _update_seq_lens_cpu(self, scheduler_output, req_ids):
        states = self.req_states
        if self.speculator is not None:
            # The copy issued after the last step's sampling must have landed.
            self.num_computed_tokens_event.synchronize()
            refresh_from = self.num_computed_tokens_cpu
        else:
            refresh_from = states.num_computed_tokens_np
        for req_id in scheduler_output.scheduled_cached_reqs.req_ids:
            slot = states.req_id_to_index[req_id]
            states.num_computed_tokens_cpu[slot] = refresh_from[slot]

        scheduled = scheduler_output.num_scheduled_tokens
        for pos, req_id in enumerate(req_ids):
            slot = states.req_id_to_index[req_id]
            self.input_buffers.seq_lens_cpu[pos] = (
                states.num_computed_tokens_cpu[slot] + scheduled[req_id]
            )

"""A simulated stand-in for what ``NPUModelRunner`` inherits from vLLM's MRV2 ``GPUModelRunner``.

The harness makes this the parent of the loaded upstream methods, so their ``super()`` calls run
here: the post-sampling kernel that advances the device-true ``num_computed_tokens`` (vLLM's
Triton ``post_update``, here plain tensor ops on simulated device tensors), and the per-step host
bookkeeping that frees finished and preempted requests, gives new ones a slot and refreshes the
scheduler's CPU mirror (``finish_requests`` / ``add_requests`` / ``update_requests``).
"""

from __future__ import annotations

from typing import Any

import torch

from vllm_syncgate.npu.state import SchedulerStep


class SimulatedGPUModelRunner:
    """Device and bookkeeping work of the MRV2 parent, reached by ``super()`` or by the driver."""

    req_states: Any

    def apply_scheduler_output(self, step: SchedulerStep) -> None:
        """What the parent does with a ``SchedulerOutput`` before ``prepare_inputs``."""
        states = self.req_states
        for req_id in sorted(step.finished_req_ids | step.preempted_req_ids):
            if req_id in states.req_id_to_index:
                states.remove_request(req_id)
        for new in step.scheduled_new_reqs:
            states.add_request(new.req_id, new.num_computed_tokens)
        cached = step.scheduled_cached_reqs
        for req_id, num_computed in zip(cached.req_ids, cached.num_computed_tokens, strict=True):
            states.num_computed_tokens_np[states.req_id_to_index[req_id]] = num_computed

    def postprocess_sampled(
        self,
        idx_mapping: torch.Tensor,
        sampled_tokens: torch.Tensor,
        num_sampled: torch.Tensor,
        num_rejected: torch.Tensor,
        query_start_loc: torch.Tensor | None = None,
    ) -> None:
        """``num_computed_tokens[i] += query_len - num_rejected`` on the device; no host wait."""
        del sampled_tokens, num_sampled  # the token ids do not change the counts under test
        if query_start_loc is None:
            raise ValueError("the simulated post_update needs query_start_loc")
        n = idx_mapping.shape[0]
        query_len = query_start_loc[1 : n + 1] - query_start_loc[:n]
        counts = self.req_states.num_computed_tokens.gpu
        counts.index_add_(0, idx_mapping, (query_len - num_rejected).to(counts.dtype))

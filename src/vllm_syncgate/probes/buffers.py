"""The pinned host buffer behind ``_to_list`` must hold one row per request, no more, no less.

vLLM #22760 and vllm-ascend #2788 both shipped it sized ``(max_model_len, 1)``: too small when a
batch has more requests than a sequence has tokens, and pinned memory wasted when it is larger.
"""

from __future__ import annotations

import torch

from vllm_syncgate.probes.result import ProbeResult, ProblemCode

WASTE_FACTOR = 4


def probe_pinned_buffer(
    buffer: torch.Tensor,
    *,
    max_num_reqs: int,
    require_pinned: bool = True,
    waste_factor: int = WASTE_FACTOR,
) -> ProbeResult:
    """Judge a ``sampled_token_ids_pinned_cpu``-style buffer against the runner's batch limit."""
    result = ProbeResult("pinned_buffer")
    rows = int(buffer.shape[0])
    result.value = tuple(buffer.shape)
    if rows < max_num_reqs:
        result.add(
            ProblemCode.BUFFER_TOO_SMALL,
            f"{rows} rows cannot hold a full batch of max_num_reqs={max_num_reqs}",
        )
    elif rows >= waste_factor * max_num_reqs:
        result.add(
            ProblemCode.BUFFER_WASTE,
            f"{rows} pinned rows for at most {max_num_reqs} requests "
            f"({rows // max_num_reqs}x more pinned host memory than needed)",
        )
    if require_pinned and not buffer.is_pinned():
        result.add(ProblemCode.NOT_PINNED, "a non_blocking copy into it would block the host")
    return result

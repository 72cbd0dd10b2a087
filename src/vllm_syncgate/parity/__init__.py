"""Token parity: exact or logprob-tolerant comparison, first divergence, the HF reference."""

from vllm_syncgate.parity.compare import (
    Divergence,
    Tolerance,
    compare_exact,
    compare_logprob,
    explained_by,
    first_difference,
)

__all__ = [
    "Divergence",
    "Tolerance",
    "compare_exact",
    "compare_logprob",
    "explained_by",
    "first_difference",
]

"""Vectorized host update of ``seq_lens_cpu`` for vllm-ascend's V2 ``NPUModelRunner``.

``_update_seq_lens_cpu`` runs on the host at the start of every step, before the step's first
launch, so its Python loops sit on the critical path of each decode step: one loop refreshes the
per-slot CPU mirror of ``num_computed_tokens`` for every scheduled cached request, a second one
writes ``seq_lens_cpu`` for every request in the batch. This is the reviewer's suggestion on
vllm-ascend #13382 (still open upstream as #16432): two fancy-indexed NumPy operations instead.
"""

from __future__ import annotations

import numpy as np


def update_seq_lens_cpu(
    seq_lens: np.ndarray,
    num_computed_tokens: np.ndarray,
    idx_mapping: np.ndarray,
    num_scheduled_tokens: np.ndarray,
    refreshed_slots: np.ndarray | None = None,
    source: np.ndarray | None = None,
) -> None:
    """Write ``seq_lens[:n] = num_computed_tokens[idx_mapping] + num_scheduled_tokens`` in place.

    - ``seq_lens``: ``[max_num_reqs]`` by batch position (``input_buffers.seq_lens_np``); the
      tail past the batch (``n = len(idx_mapping)``) is left untouched.
    - ``num_computed_tokens``: ``[max_num_reqs]`` by request slot, the CPU mirror
      (``req_states.num_computed_tokens_cpu.numpy()``); its ``refreshed_slots`` are first set from
      ``source`` (the D2H buffer with speculation, the scheduler's ``num_computed_tokens_np``
      without).
    - ``idx_mapping``: ``[n]`` batch position -> request slot; ``num_scheduled_tokens``: ``[n]`` by
      batch position.

    Every array is written in place, so dtypes and shared torch storage are kept. Lengths are
    checked because NumPy would otherwise broadcast a length-1 array silently.
    """
    n = idx_mapping.shape[0]
    if num_scheduled_tokens.shape != (n,):
        raise ValueError(
            f"num_scheduled_tokens has shape {num_scheduled_tokens.shape}, expected ({n},)"
        )
    if n > seq_lens.shape[0]:
        raise ValueError(f"{n} requests do not fit seq_lens of length {seq_lens.shape[0]}")
    if refreshed_slots is not None and len(refreshed_slots):
        if source is None:
            raise ValueError("refreshed_slots given without a source to refresh them from")
        num_computed_tokens[refreshed_slots] = source[refreshed_slots]
    np.add(
        num_computed_tokens[idx_mapping],
        num_scheduled_tokens,
        out=seq_lens[:n],
        casting="same_kind",
    )

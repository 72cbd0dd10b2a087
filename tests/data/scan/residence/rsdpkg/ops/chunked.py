"""Chunked kernels' host bookkeeping (the FLA/310P wrapper shapes): helpers that pad on the
host copy of the sequence starts and hand back what they built."""

import torch


def run_chunked(x: torch.Tensor, cu_seqlens: torch.LongTensor | None = None,
                cu_seqlens_host: tuple[int, ...] | None = None) -> torch.Tensor:
    cu_seqlens = cu_seqlens.to(torch.int64)
    bounds = cu_seqlens.tolist()  # expect: blocking_readback none context
    if cu_seqlens_host is None:
        # the fallback for a caller without the builder's host copy: not the default path
        cu_seqlens_host = tuple(cu_seqlens.tolist())  # expect: blocking_readback unknown_residence twin
    padded, cu_kernel = _pad_to_chunks(x, cu_seqlens.cpu())  # expect: blocking_readback none context
    widths = cu_kernel.tolist()
    count = _chunk_count(cu_kernel)
    _, cu_device = _pad_to_chunks(x, cu_seqlens)
    device_widths = cu_device.tolist()  # expect: blocking_readback none returned
    return padded[: bounds[-1] + count + widths[-1] + device_widths[-1] + cu_seqlens_host[-1]]


def _pad_to_chunks(x: torch.Tensor, cu_seqlens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    ends = [0]
    for _ in range(len(x)):
        ends.append(ends[-1] + 64)
    cu_padded = torch.tensor(ends, dtype=torch.int64, device=cu_seqlens.device)  # expect: blocking_copy none returned
    return x, cu_padded


def _chunk_count(cu_seqlens: torch.Tensor) -> int:
    total = 0
    for i in range(len(cu_seqlens) - 1):
        total += int(cu_seqlens[i + 1].item() - cu_seqlens[i].item())
    return total

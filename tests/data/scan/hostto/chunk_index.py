"""Chunk-index helpers of our own, written the way FLA's are: the table is built on the host
and handed back ``.to(cu_seqlens)``, where (and in the dtype) the caller's lengths are."""

import torch


def chunk_table(cu_seqlens: torch.LongTensor, chunk_size: int) -> torch.LongTensor:
    lens = cu_seqlens[1:] - cu_seqlens[:-1]
    counts = (lens + chunk_size - 1) // chunk_size
    indices = torch.cat([torch.arange(n) for n in counts.tolist()])
    return torch.stack([indices.eq(0).cumsum(0) - 1, indices], 1).to(cu_seqlens)


def chunk_table_pinned(cu_seqlens: torch.LongTensor, chunk_size: int) -> torch.LongTensor:
    starts = torch.arange(0, int(cu_seqlens[-1]), chunk_size, pin_memory=True)
    return starts.to(cu_seqlens)

"""A kernel's Python wrapper (an op helper): never named on the command line, parsed when a
forward's call reaches it; the model calls it through an autograd Function's apply."""

import torch


def chunk_delta_fwd(q, cu_seqlens):
    offsets = cu_seqlens.tolist()  # expect: blocking_readback none helper
    return q, offsets


class ChunkDeltaFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, cu_seqlens):
        return chunk_delta_fwd(q, cu_seqlens)


def chunk_delta(q, cu_seqlens):
    return ChunkDeltaFunction.apply(q, cu_seqlens)


def chunk_unused(q):
    return q.cpu()

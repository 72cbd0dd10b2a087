"""Helpers that read their tensor arguments back: where those live is the callers' business."""

import torch


def host_spans(start_loc: torch.Tensor, lens: torch.Tensor):
    # every caller passes host slices: reading them is no sync
    q = start_loc.to(dtype=torch.long)
    counts = q[1:] - q[:-1]
    total = int(q[-1].item())
    return total, torch.repeat_interleave(lens.to(dtype=torch.long), counts)


def device_spans(start_loc: torch.Tensor):
    q = start_loc.to(dtype=torch.long)
    first = q[:1] + 1
    return first.tolist()  # expect: blocking_readback none derived


def longest(meta: CsCommonAttentionMetadata):  # noqa: F821 - annotation only
    lens = meta.seq_lens
    return lens.max().item()  # expect: blocking_readback none record_default


def chunk_ids(start_loc: torch.Tensor, sizes: list[int]):
    # built in pageable host memory and sent where start_loc lives: the runner passes host
    # starts only, so this is a host-to-host copy
    ids = torch.cat([torch.arange(n) for n in sizes])
    return ids.to(device=start_loc.device, non_blocking=True)


def chunk_ids_near(start_loc: torch.Tensor, sizes: list[int]):
    ids = torch.cat([torch.arange(n) for n in sizes])
    return ids.to(device=start_loc.device, non_blocking=True)  # expect: blocking_copy none target


def widest(meta: CsFlashAttentionMetadata, limit: int):  # noqa: F821 - annotation only
    if meta.max_seq_len > limit:  # an int field: host
        return limit
    return meta.seq_lens.max().item()  # expect: blocking_readback none record_default

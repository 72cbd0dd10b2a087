"""Two records of our own that store each other's field: the draft lengths are kept as staged
counts, and the staged counts become the next drafts' lengths. Judging ``Drafts.lens`` reads
``Staged.counts``, whose only construction reads ``Drafts.lens`` back: a recursion the scan
cuts."""

from typing import NamedTuple

import torch


class Drafts(NamedTuple):
    lens: torch.Tensor


class Staged(NamedTuple):
    counts: torch.Tensor


def stage(drafts: Drafts) -> Staged:
    return Staged(counts=drafts.lens)


def redraft(staged: Staged) -> Drafts:
    return Drafts(lens=staged.counts)

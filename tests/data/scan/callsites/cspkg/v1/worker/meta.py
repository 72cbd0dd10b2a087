"""The record a runner fills for its attention metadata builders: host/device pairs."""

from dataclasses import dataclass

import torch


@dataclass
class CsCommonAttentionMetadata:
    query_start_loc: torch.Tensor
    query_start_loc_cpu: torch.Tensor
    positions: torch.Tensor
    seq_lens: torch.Tensor
    num_reqs: int


@dataclass
class CsFlashAttentionMetadata:
    """What a backend's builder hands its impl: the device halves of the record above."""

    seq_lens: torch.Tensor
    max_seq_len: int

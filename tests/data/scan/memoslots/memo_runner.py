"""A runner of our own whose builder memoises this step's tensors in a dict.

The first build of a step derives the prefill query starts from the device query starts of
the step's record and keeps them in ``self.memo["starts"]``; a later build of the same step
reads them back by that key. Either way the starts are on the device, so the ``.max().item()``
after the branch is a readback on every prefill step. The dict itself is a host object; what
it holds under a key is what the class stores there. The host count kept under ``"count"``
stays on the host, so its ``int()`` is no readback.
"""

from dataclasses import dataclass

import torch


@dataclass
class ToyCommonAttentionMetadata:
    query_start: torch.Tensor
    query_start_cpu: torch.Tensor


class MemoBuilder:
    def __init__(self) -> None:
        self.memo: dict[str, torch.Tensor] = {}

    def prepare(self, meta: ToyCommonAttentionMetadata, first: int) -> int:
        if not self.memo:
            starts = meta.query_start[first:] - meta.query_start[first]
            count = meta.query_start_cpu[first:] - meta.query_start_cpu[first]
            self.memo["starts"] = starts
            self.memo["count"] = count
        else:
            starts = self.memo["starts"]
            count = self.memo["count"]
        lens = starts[1:] - starts[:-1]
        longest = lens.max().item()  # expect: blocking_readback none
        return longest + int(count[-1])


class MemoModelRunner:
    def __init__(self) -> None:
        self.builder = MemoBuilder()

    def execute_model(self, meta: ToyCommonAttentionMetadata) -> int:
        return self.builder.prepare(meta, 0)

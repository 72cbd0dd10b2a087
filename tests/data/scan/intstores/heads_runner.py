"""A runner of our own whose attention repeats each key head by the number of query heads per
key head: a Python int the constructor computes from its int arguments (``num_kv_heads: int |
None``, None meaning "as many as the query heads"), so ``repeat_interleave`` by it has a size
known on the host and reads nothing back. The grouped variant's repeat count is a device
tensor: its ``repeat_interleave`` reads the counts back to size the result."""

import torch


class HeadsAttention(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int | None = None) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        self.num_queries_per_kv = self.num_heads // self.num_kv_heads
        self.group_sizes = torch.ones(self.num_kv_heads, dtype=torch.long, device="cuda")

    def forward(self, key: torch.Tensor) -> torch.Tensor:
        if (num_repeat := self.num_queries_per_kv) > 1:
            key = torch.repeat_interleave(key, num_repeat, dim=2)  # never: an int repeat
        return key

    def grouped(self, key: torch.Tensor) -> torch.Tensor:
        return torch.repeat_interleave(key, self.group_sizes, dim=2)  # expect: blocking_readback none


class HeadsModelRunner:
    def __init__(self) -> None:
        self.attn = HeadsAttention(8, 2)
        self.keys = torch.zeros(4096, 1, 2, 64, device="cuda")

    def execute_model(self, num_tokens: int) -> torch.Tensor:
        keys = self.keys[:num_tokens]
        return self.attn(keys) + self.attn.grouped(keys)

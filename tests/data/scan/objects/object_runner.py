"""A runner of our own whose block tables sit behind objects: the runner's batch holds a table
per KV-cache group, each with a host and a device half, while the attention records it builds
store a device tensor in a field of the same name (``block_table``). Read through the objects,
``batch.block_table.tables[gid]`` is a table object, not that device field: what its methods
return is where those methods say (the host array, the device rows), and an element of the host
array is no readback. The record's own field and the device rows still read back."""

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class AttentionRecord:
    block_table: torch.Tensor
    seq_lens: torch.Tensor


class GroupTable:
    def __init__(self, rows: int, cols: int) -> None:
        self.host = torch.zeros((rows, cols), dtype=torch.int32, pin_memory=True)
        self.device = torch.zeros((rows, cols), dtype=torch.int32, device="cuda")

    def host_array(self) -> np.ndarray:
        return self.host.numpy()

    def device_rows(self, n: int) -> torch.Tensor:
        return self.device[:n]


class GroupTables:
    def __init__(self, groups: int) -> None:
        self.tables = [GroupTable(16, 32) for _ in range(groups)]


class Batch:
    def __init__(self) -> None:
        self.block_table = GroupTables(2)


class ObjectModelRunner:
    def __init__(self) -> None:
        self.batch = Batch()
        self.seq_lens = torch.zeros(16, dtype=torch.int32, device="cuda")
        self.block_gpu = torch.zeros((16, 32), dtype=torch.int32, device="cuda")

    def execute_model(self, num_reqs: int) -> list:
        record = AttentionRecord(
            block_table=self.block_gpu[:num_reqs],
            seq_lens=self.seq_lens[:num_reqs],
        )
        moved = []
        for gid in range(2):
            table = self.batch.block_table.tables[gid].host_array()
            moved.append(int(table[0, 1]))
        first = self.batch.block_table.tables[0].device_rows(num_reqs)
        moved.append(int(first[0, 0]))  # expect: blocking_readback none
        moved.append(record.block_table[0, 0].item())  # expect: blocking_readback none
        return moved

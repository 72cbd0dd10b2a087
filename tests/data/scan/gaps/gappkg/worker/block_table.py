"""Fixture: block tables held in a list by a group object that the input batch builds.

The runner reaches ``commit_slot_mapping`` through ``self.input_batch.block_table`` (two
attributes deep) and each table through ``for table in self.tables`` (a list the group builds).
"""

import torch


class SlotTable:
    def __init__(self, size: int, device: torch.device, pin_memory: bool) -> None:
        # the host half is int64, the device half int32: the copy converts on the host
        self.slot_mapping_cpu = torch.zeros(size, dtype=torch.int64, device="cpu", pin_memory=pin_memory)
        self.slot_mapping = torch.zeros(size, dtype=torch.int32, device=device)
        self.row_ids_cpu = torch.zeros(size, dtype=torch.int32, device="cpu", pin_memory=pin_memory)
        self.row_ids = torch.zeros(size, dtype=torch.int32, device=device)

    def commit_slot_mapping(self, n: int) -> None:
        self.slot_mapping[:n].copy_(self.slot_mapping_cpu[:n], non_blocking=True)  # expect: blocking_copy none dtype
        # same dtype, dense prefix of a pinned buffer: an async DMA
        self.row_ids[:n].copy_(self.row_ids_cpu[:n], non_blocking=True)

    def positions_to_device(self, positions_cpu: torch.Tensor, device: torch.device) -> torch.Tensor:
        # .to(device, dtype=...) of a host tensor: the conversion is made on the host first
        return self.row_ids_cpu.to(device, dtype=torch.int64, non_blocking=True)  # expect: blocking_copy none dtype


class TableGroup:
    def __init__(self, sizes: list[int], device: torch.device) -> None:
        self.tables = [SlotTable(size, device, True) for size in sizes]

    def commit_slot_mapping(self, n: int) -> None:
        for table in self.tables:
            table.commit_slot_mapping(n)

    def positions_to_device(self, positions_cpu: torch.Tensor, device: torch.device) -> torch.Tensor:
        return self.tables[0].positions_to_device(positions_cpu, device)


class GapInputBatch:
    def __init__(self, sizes: list[int], device: torch.device) -> None:
        self.block_table = TableGroup(sizes, device)

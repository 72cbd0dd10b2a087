"""Fixture: device views of pinned host rows, handed out round-robin by a pool (the shape a
platform without unified addressing patches, see patch_view.py)."""

import torch


class DeviceView:
    def __init__(self, rows: int, device: torch.device) -> None:
        self.host = torch.zeros(rows, dtype=torch.int32, device="cpu", pin_memory=True)
        self.dev = torch.zeros(rows, dtype=torch.int32, device=device)


class ViewPool:
    def __init__(self, rows: int, device: torch.device) -> None:
        self._views = [DeviceView(rows, device) for _ in range(2)]
        self._next = 0

    def publish(self, values: list[int]) -> torch.Tensor:
        self._next = 1 - self._next
        view = self._views[self._next]
        view.host[: len(values)] = torch.tensor(values, dtype=torch.int32)
        return view.dev[: len(values)]

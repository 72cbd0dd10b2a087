"""A runner of our own whose kernel wrapper tiles variable-length sequences on the host.

The wrapper reads the device sequence starts back, has a helper build a tile table from the
host copy and hand it back with ``.to(starts)`` (where the argument lives: here the host),
then uploads the table with ``.cuda()``: a synchronous copy of a fresh host tensor.
"""

import torch


def spans(starts: torch.Tensor) -> torch.Tensor:
    return starts[1:] - starts[:-1]


def tile_table(starts: torch.Tensor, width: int) -> torch.Tensor:
    rows = [torch.arange(n) for n in (spans(starts) // width).tolist()]
    tiles = torch.cat(rows)
    return torch.stack([tiles.eq(0).cumsum(0) - 1, tiles], 1).to(starts)


def tiled_kernel(x: torch.Tensor, starts: torch.Tensor | None, width: int = 64) -> torch.Tensor:
    if starts is not None:
        starts = starts.cpu()  # expect: blocking_readback none
        table = tile_table(starts, width) if starts is not None else None
        table = table.cuda()  # expect: blocking_copy none
    else:
        table = None
    return x if table is None else x + table.sum()


class TileModelRunner:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.starts = torch.zeros(9, dtype=torch.int32, device=device)

    def execute_model(self, x: torch.Tensor) -> torch.Tensor:
        return tiled_kernel(x, self.starts)

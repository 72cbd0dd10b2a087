"""A runner of our own that keeps per-size buffers in dicts filled by a computed key, the way
CUDA-graph wrappers keep their static inputs: ``self.static_inputs[size] = torch.empty(...,
device=...)``. An element lives where the class's stores by key put it, not on the host because
the dict started empty: copying a device tensor into a static device input is device-to-device
and no sync, while a copy into a pageable host buffer kept the same way still blocks. A graph
entry fetched with ``.get`` is the display stored under the key, a dict of device buffers.
A device tensor's own elements stay on the device whatever is stored into them."""

import torch


class KeyedSlotsModelRunner:
    def __init__(self) -> None:
        self.hidden = torch.zeros(64, 16, device="cuda")
        self.static_inputs: dict[int, torch.Tensor] = {}
        self.staged_outputs: dict[int, torch.Tensor] = {}
        self.graphs = {}
        self.positions = torch.zeros(64, dtype=torch.long, device="cuda")

    def capture(self, sizes: list[int]) -> None:
        for size in sizes:
            self.static_inputs[size] = torch.empty(size, 16, device="cuda")
            self.staged_outputs[size] = torch.empty(size, 16)
            self.graphs[size] = {"static": torch.empty(size, 16, device="cuda")}
            self.positions[size] = 0

    def execute_model(self, num_tokens: int) -> torch.Tensor:
        hidden = self.hidden[:num_tokens]
        self.static_inputs[num_tokens].copy_(hidden)
        entry = self.graphs.get(num_tokens)
        if entry is not None:
            entry["static"].copy_(hidden)
        self.staged_outputs[num_tokens].copy_(hidden)  # expect: blocking_copy none
        last = self.positions[num_tokens].item()  # expect: blocking_readback none
        assert last >= 0
        return self.staged_outputs[num_tokens]

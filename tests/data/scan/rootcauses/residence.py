"""Host tensors taken for device tensors (issue 12, root cause 2): none of these fail the gate."""

import torch


def all_reduced_sizes(sizes):  # a helper the scan cannot see through: residence unknown
    return sizes


class ResidenceModelRunner:
    def __init__(self) -> None:
        self.model = None

    def execute_model(self, batch, mm_input: dict, sizes) -> None:
        mm_input["image_grid_thw"].tolist()  # CPU tensors from the processor
        for grid in mm_input.get("video_grid_thw", []):
            grid.tolist()
        counts = torch.zeros(4)
        counts.numpy()  # .numpy() raises on a device tensor: never a sync
        hidden = self.model(batch)
        hidden.cpu().numpy()  # expect: blocking_readback none
        across_dp = all_reduced_sizes(sizes)
        across_dp.item()  # expect: blocking_readback unknown_residence


class CPUModelRunner(ResidenceModelRunner):
    """The CPU backend: its device is the host, so it is never a root."""

    def execute_model(self, batch, mm_input: dict, sizes) -> None:
        self.model(batch).tolist()

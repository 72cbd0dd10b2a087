"""A runner of our own whose step carries debugging aids behind environment variables, in the
shapes forks leave them (a dump directory read in a helper that returns when it is unset, a
``... or None`` dump switch, a mode string lowered and compared, a presence test): none is set in
a default deployment, so their readbacks are opt-in. Two switches that default to on, and one
the module sets itself on import, keep their syncs on the default path."""

import os

import torch

os.environ["RUNNER_FORCE_CHECKS"] = "1"


def dump_positions(positions: torch.Tensor) -> None:
    dump_dir = os.environ.get("RUNNER_DUMP_DIR")
    if not dump_dir:
        return
    torch.save(positions.cpu(), os.path.join(dump_dir, "positions.pt"))  # expect: blocking_readback opt_in


class EnvModelRunner:
    def __init__(self) -> None:
        self.positions = torch.zeros(64, dtype=torch.long, device="cuda")
        self.counts = torch.zeros(8, dtype=torch.long, device="cuda")

    def execute_model(self, num_tokens: int) -> list:
        positions = self.positions[:num_tokens]
        dump_positions(positions)
        trace = os.environ.get("RUNNER_TRACE") or None
        if trace is not None:
            print(positions.tolist())  # expect: blocking_readback opt_in
        if os.getenv("RUNNER_SYNC_MODE", "stream").strip().lower() == "device":
            torch.cuda.synchronize()  # expect: device_sync opt_in
        if "RUNNER_CHECK_COUNTS" in os.environ:
            assert self.counts.sum().item() >= 0  # expect: blocking_readback opt_in
        totals = []
        if os.environ.get("RUNNER_KEEP_TOTALS", "1") == "1":
            totals.append(self.counts.sum().item())  # expect: blocking_readback none
        if int(os.getenv("RUNNER_CHECK_FIRST", "1")):
            totals.append(positions[0].item())  # expect: blocking_readback none
        if os.environ.get("RUNNER_FORCE_CHECKS"):
            totals.append(positions[-1].item())  # expect: blocking_readback none
        return totals

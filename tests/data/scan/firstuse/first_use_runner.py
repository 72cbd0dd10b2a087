"""A runner of our own whose one-time work sits behind members, not names: a backend built on
first use by a method the step calls (``if self.backend is None: self._build_backend()``), a
statistics log a flag lets run once (``if not self._logged: self._logged = True``), and a flag
set through a method. A build method that does not build the tested member, a flag the branch
never sets and a flag a per-step method sets back keep their syncs: they run on every step."""

import logging

import torch

logger = logging.getLogger(__name__)


class FirstUseModelRunner:
    def __init__(self) -> None:
        self.codes = torch.zeros(64, dtype=torch.long, device="cuda")
        self.backend = None
        self.table = None
        self.other = None
        self._logged = False
        self._primed = False
        self._warned = False
        self._seen = False

    def _build_backend(self) -> None:
        weights = torch.tensor([1.0, 2.0], device="cuda")  # expect: blocking_copy warmup
        torch.accelerator.synchronize()  # expect: device_sync warmup
        self.backend = weights

    def _load_other(self) -> None:
        torch.accelerator.synchronize()  # expect: device_sync none
        self.other = torch.ones(4, device="cuda")

    def _mark_primed(self) -> None:
        self._primed = True

    def reset_step(self) -> None:
        self._seen = False

    def execute_model(self, num_tokens: int) -> int:
        if self.backend is None:
            self._build_backend()
        if self.table is None:
            self._load_other()
        if not self._logged:
            self._logged = True
            logger.info("max code %d", self.codes.max().item())  # expect: blocking_readback warmup
        if not self._primed:
            self._mark_primed()
            logger.info("first code %d", self.codes[0].item())  # expect: blocking_readback warmup
        if not self._warned:
            logger.info("min code %d", self.codes.min().item())  # expect: blocking_readback none
        if not self._seen:
            self._seen = True
            logger.info("sum %d", self.codes.sum().item())  # expect: blocking_readback none
        self.reset_step()
        return num_tokens

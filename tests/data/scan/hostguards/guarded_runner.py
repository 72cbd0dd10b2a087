"""A runner of our own with two guards whose outcome the source decides: a readback logged only
when debug logging is on (off by default: the level a server starts with is INFO), and a host
view made by ``x.cpu() if x.is_cuda else x``, which is the host copy where ``x`` is on the
accelerator and ``x`` itself only where ``x`` is already on the host. An info-level block, a view
chosen by an unrelated flag and one whose other branch is another tensor keep their syncs."""

import logging

import torch

logger = logging.getLogger(__name__)


class GuardedModelRunner:
    def __init__(self) -> None:
        self.input_ids = torch.zeros(64, dtype=torch.long, device="cuda")
        self.lens = torch.zeros(8, dtype=torch.long, device="cuda")

    def execute_model(self, num_tokens: int, scheduler_output) -> list:
        ids = self.input_ids[:num_tokens]
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("lens %s", self.lens.tolist())  # expect: blocking_readback opt_in
        if logger.isEnabledFor(logging.INFO):
            logger.info("total %d", self.lens.sum().item())  # expect: blocking_readback none
        header = ids.cpu() if ids.is_cuda else ids  # expect: blocking_readback none
        first = int(header[0])
        chosen = ids.cpu() if scheduler_output.keep else ids  # expect: blocking_readback none
        second = int(chosen[1])  # expect: blocking_readback none
        other = ids.cpu() if ids.is_cuda else self.lens  # expect: blocking_readback none
        third = int(other[2])  # expect: blocking_readback none
        return [first, second, third]

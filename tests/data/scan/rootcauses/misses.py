"""Syncs the scan used to miss (issue 12, root cause 3)."""

from typing import NamedTuple

import torch


def vllm_version_is(version: str) -> bool:
    return version == "0.1"


class Logprobs(NamedTuple):
    token_ids: torch.Tensor

    def tolists(self) -> list:
        return self.token_ids.tolist()  # expect: blocking_readback none


class StepState(NamedTuple):
    scheduler_output: object
    logits: torch.Tensor


class DefaultState:
    def postprocess(self) -> None:
        torch.cuda.synchronize()  # expect: device_sync none


def init_state() -> DefaultState:
    return DefaultState()


class MissesModelRunner:
    def __init__(self) -> None:
        self.model = None
        self.sampler = None
        self.state = init_state()  # built by a factory function
        self.step_state = None

    def execute_model(self, batch) -> None:
        out = self.sampler(self.model(batch))
        logprobs = out.logprobs
        lists = logprobs.tolists() if logprobs is not None else None  # a method of a returned record
        if bool(out.has_nan):  # expect: blocking_readback none
            lists = None
        maybe = out.ids if lists else None
        maybe.tolist()  # expect: blocking_readback none
        self.step_state = StepState(None, out.logits)
        self.state.postprocess()
        self.sample_tokens()
        self._update_seq_lens()

    def sample_tokens(self) -> None:
        _, logits = self.step_state
        logits = logits.to("cpu")  # expect: blocking_copy none
        logits.tolist()  # the host copy: no sync

    if vllm_version_is("0.1"):

        def _update_seq_lens(self) -> None:
            self.num_computed_event.synchronize()  # expect: event_sync none

    else:

        def _update_seq_lens(self) -> None:
            pass

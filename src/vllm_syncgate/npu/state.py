"""The explicit state a V2 ``NPUModelRunner`` method runs against, instead of a built runner.

Building the real runner needs a model config, a device and the whole of vLLM. The methods this
harness runs read only a handful of attributes, so those are spelled out here, with the same
names, shapes, dtypes and residence as upstream (``AscendRequestState``, ``AscendInputBuffers``,
the runner's D2H resources). Anything a method reads that is not listed fails loudly with an
``AttributeError`` naming it, which is the point of an explicit spec.

Everything that holds device memory is created with ``device="npu"``, so it must be built inside
``vllm_syncgate.fakedev.simulated_accelerator("npu")``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

DEVICE = "npu"


@dataclass(frozen=True)
class RunnerSpec:
    """The knobs of a runner the seq-lens sync methods depend on."""

    max_num_reqs: int = 8
    num_speculative_steps: int = 0  # > 0: a speculator exists (MTP / EAGLE), drafts are scheduled

    def __post_init__(self) -> None:
        if self.max_num_reqs < 1:
            raise ValueError(f"max_num_reqs must be >= 1, not {self.max_num_reqs}")
        if self.num_speculative_steps < 0:
            raise ValueError(f"num_speculative_steps must be >= 0: {self.num_speculative_steps}")

    @property
    def speculative(self) -> bool:
        return self.num_speculative_steps > 0


class StagedDeviceTensor:
    """The ``.gpu`` face of vLLM's ``StagedWriteTensor`` (host writes staged, applied on device)."""

    def __init__(self, size: int, dtype: torch.dtype) -> None:
        self.gpu = torch.zeros(size, dtype=dtype, device=DEVICE)


class RequestStates:
    """``AscendRequestState`` as far as the methods reach: slots, the device truth, two CPU views.

    - ``num_computed_tokens.gpu``: the device-true count, advanced by the post-sampling kernel;
    - ``num_computed_tokens_np``: the scheduler's optimistic mirror, refreshed every step;
    - ``num_computed_tokens_cpu``: the Ascend-only CPU tensor ``seq_lens_cpu`` is built from.
    """

    def __init__(self, max_num_reqs: int) -> None:
        self.max_num_reqs = max_num_reqs
        self.req_id_to_index: dict[str, int] = {}
        self.index_to_req_id: dict[int, str] = {}
        # Popped from the end, so slot 0 is handed out first, as upstream does.
        self.free_indices: list[int] = list(range(max_num_reqs - 1, -1, -1))
        self.num_computed_tokens = StagedDeviceTensor(max_num_reqs, torch.int32)
        self.num_computed_tokens_np = np.zeros(max_num_reqs, dtype=np.int32)
        self.num_computed_tokens_cpu = torch.zeros(max_num_reqs, dtype=torch.int32, device="cpu")

    def add_request(self, req_id: str, num_computed_tokens: int) -> int:
        """Give ``req_id`` a free slot and set all three views of its computed tokens."""
        if req_id in self.req_id_to_index:
            raise ValueError(f"request {req_id!r} already holds a slot")
        if not self.free_indices:
            raise ValueError(f"no free slot for {req_id!r} (max_num_reqs={self.max_num_reqs})")
        slot = self.free_indices.pop()
        self.req_id_to_index[req_id] = slot
        self.index_to_req_id[slot] = req_id
        self.num_computed_tokens_np[slot] = num_computed_tokens
        self.num_computed_tokens_cpu[slot] = num_computed_tokens
        self.num_computed_tokens.gpu[slot] = num_computed_tokens  # a fill kernel, no host wait
        return slot

    def remove_request(self, req_id: str) -> None:
        slot = self.req_id_to_index.pop(req_id)
        del self.index_to_req_id[slot]
        self.free_indices.append(slot)


class InputBuffers:
    """``AscendInputBuffers``' host side: ``seq_lens_cpu`` and the NumPy view sharing its memory."""

    def __init__(self, max_num_reqs: int) -> None:
        self.seq_lens_cpu = torch.zeros(max_num_reqs, dtype=torch.int32, device="cpu")
        self.seq_lens_np: np.ndarray = self.seq_lens_cpu.numpy()


@dataclass(frozen=True)
class Speculator:
    """Stands for the MTP/EAGLE speculator; the methods only test it against ``None``."""

    num_speculative_steps: int


@dataclass(frozen=True)
class NewRequest:
    """One entry of ``SchedulerOutput.scheduled_new_reqs`` (resumed requests come back as new)."""

    req_id: str
    num_computed_tokens: int = 0


@dataclass(frozen=True)
class CachedRequests:
    """``SchedulerOutput.scheduled_cached_reqs``: requests already in a slot, and the scheduler's
    (optimistic, with speculation) count of their computed tokens."""

    req_ids: list[str] = field(default_factory=list)
    num_computed_tokens: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class SchedulerStep:
    """The ``SchedulerOutput`` fields the runner's bookkeeping and the seq-lens sync methods read."""

    scheduled_new_reqs: list[NewRequest] = field(default_factory=list)
    scheduled_cached_reqs: CachedRequests = field(default_factory=CachedRequests)
    num_scheduled_tokens: dict[str, int] = field(default_factory=dict)
    finished_req_ids: set[str] = field(default_factory=set)
    preempted_req_ids: set[str] = field(default_factory=set)

    @property
    def total_num_scheduled_tokens(self) -> int:
        return sum(self.num_scheduled_tokens.values())


def runner_state(spec: RunnerSpec) -> dict[str, Any]:
    """The attributes of a fake ``self``, named as on upstream's runner (see module docstring)."""
    return {
        "max_num_reqs": spec.max_num_reqs,
        "num_speculative_steps": spec.num_speculative_steps,
        "speculator": Speculator(spec.num_speculative_steps) if spec.speculative else None,
        "req_states": RequestStates(spec.max_num_reqs),
        "input_buffers": InputBuffers(spec.max_num_reqs),
        "num_computed_tokens_event": torch.npu.Event(),
        "num_computed_tokens_stream": torch.npu.Stream(),
        "num_computed_tokens_cpu": torch.empty(
            spec.max_num_reqs, dtype=torch.int32, device="cpu", pin_memory=True
        ),
    }

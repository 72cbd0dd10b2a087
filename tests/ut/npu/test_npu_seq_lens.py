"""``vllm_syncgate.npu.update_seq_lens_cpu`` equals the two per-request loops it replaces.

The loop version is the after-fix fixture runner's own ``_update_seq_lens_cpu``, run through the
harness on a fake self; the vectorized one runs on an identical copy of the same random state.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_syncgate.fakedev import simulated_accelerator
from vllm_syncgate.npu import update_seq_lens_cpu
from vllm_syncgate.npu.harness import bind, load_runner_class
from vllm_syncgate.npu.parent import SimulatedGPUModelRunner
from vllm_syncgate.npu.state import CachedRequests, RunnerSpec, SchedulerStep, runner_state


@st.composite
def random_states(draw):
    """A runner state mid-flight: shuffled request->slot mapping, some requests cached, a tail."""
    max_reqs = draw(st.integers(1, 48))
    n = draw(st.integers(0, max_reqs))
    slots = draw(st.permutations(range(max_reqs)))[:n]
    cached = [s for s in slots if draw(st.booleans())]
    values = st.integers(0, 1 << 20)
    arrays = st.lists(values, min_size=max_reqs, max_size=max_reqs)
    return {
        "max_reqs": max_reqs,
        "slots": slots,
        "cached": cached,
        "scheduled": draw(st.lists(st.integers(1, 512), min_size=n, max_size=n)),
        "mirror_cpu": draw(arrays),  # req_states.num_computed_tokens_cpu before the step
        "scheduler_np": draw(arrays),  # req_states.num_computed_tokens_np (scheduler's view)
        "d2h": draw(arrays),  # the pinned buffer the last step's copy filled
        "seq_lens": draw(arrays),  # stale values; the tail past n must survive
        "speculative": draw(st.booleans()),
    }


def _fake_self(runner_cls, s):
    runner = bind(runner_cls, runner_state(RunnerSpec(s["max_reqs"], 2 if s["speculative"] else 0)))
    states = runner.req_states
    for i, slot in enumerate(s["slots"]):
        states.req_id_to_index[f"r{i}"] = slot
    states.num_computed_tokens_cpu.copy_(torch.tensor(s["mirror_cpu"], dtype=torch.int32))
    states.num_computed_tokens_np[:] = s["scheduler_np"]
    runner.num_computed_tokens_cpu.copy_(torch.tensor(s["d2h"], dtype=torch.int32))
    runner.input_buffers.seq_lens_cpu.copy_(torch.tensor(s["seq_lens"], dtype=torch.int32))
    return runner


def _run_both(runner_cls, s, vectorized):
    """(loop-updated fake self, vectorized-updated fake self) from the same state ``s``."""
    req_ids = [f"r{i}" for i in range(len(s["slots"]))]
    cached_ids = [f"r{s['slots'].index(slot)}" for slot in s["cached"]]
    step = SchedulerStep(
        scheduled_cached_reqs=CachedRequests(cached_ids, [0] * len(cached_ids)),
        num_scheduled_tokens=dict(zip(req_ids, s["scheduled"], strict=True)),
    )
    looped = _fake_self(runner_cls, s)
    looped._update_seq_lens_cpu(step, req_ids)
    vec = _fake_self(runner_cls, s)
    source = vec.num_computed_tokens_cpu.numpy() if s["speculative"] else (
        vec.req_states.num_computed_tokens_np
    )
    vectorized(
        vec.input_buffers.seq_lens_np,
        vec.req_states.num_computed_tokens_cpu.numpy(),
        np.array(s["slots"], dtype=np.int64),
        np.array(s["scheduled"], dtype=np.int32),
        refreshed_slots=np.array(s["cached"], dtype=np.int64),
        source=source,
    )
    return looped, vec


def _views(runner):
    return (
        runner.input_buffers.seq_lens_cpu.tolist(),
        runner.req_states.num_computed_tokens_cpu.tolist(),
    )


@settings(settings.get_profile("syncgate-npu"), max_examples=60)
@given(s=random_states())
def test_vectorized_equals_loop_version(after_fix_source, s):
    runner_cls = load_runner_class(after_fix_source, SimulatedGPUModelRunner)
    with simulated_accelerator("npu"):
        looped, vec = _run_both(runner_cls, s, update_seq_lens_cpu)
        assert _views(vec) == _views(looped)
        seq_lens_cpu = vec.input_buffers.seq_lens_cpu
        assert seq_lens_cpu.tolist()[len(s["slots"]):] == s["seq_lens"][len(s["slots"]):]
        assert seq_lens_cpu.dtype == vec.req_states.num_computed_tokens_cpu.dtype == torch.int32
        assert vec.input_buffers.seq_lens_np.dtype == np.int32
        # Still one buffer: the NumPy view and the tensor share memory after the update.
        assert np.shares_memory(vec.input_buffers.seq_lens_np, seq_lens_cpu.numpy())


def _by_batch_position(seq_lens, computed, idx_mapping, scheduled, refreshed_slots, source):
    computed[refreshed_slots] = source[refreshed_slots]
    n = len(idx_mapping)
    seq_lens[:n] = computed[:n] + scheduled  # forgets the request->slot mapping


def _no_refresh(seq_lens, computed, idx_mapping, scheduled, refreshed_slots, source):
    del refreshed_slots, source
    seq_lens[: len(idx_mapping)] = computed[idx_mapping] + scheduled


def _clobbers_tail(seq_lens, computed, idx_mapping, scheduled, refreshed_slots, source):
    computed[refreshed_slots] = source[refreshed_slots]
    seq_lens[:] = 0
    seq_lens[: len(idx_mapping)] = computed[idx_mapping] + scheduled


FIXED_STATE = {
    "max_reqs": 6, "slots": [4, 0, 2], "cached": [4, 2], "scheduled": [1, 5, 2],
    "mirror_cpu": [10, 11, 12, 13, 14, 15], "scheduler_np": [20, 21, 22, 23, 24, 25],
    "d2h": [30, 31, 32, 33, 34, 35], "seq_lens": [9, 9, 9, 9, 9, 9], "speculative": False,
}


@pytest.mark.parametrize("broken", [_by_batch_position, _no_refresh, _clobbers_tail])
def test_comparison_catches_broken_vectorizations(after_fix_source, broken):
    runner_cls = load_runner_class(after_fix_source, SimulatedGPUModelRunner)
    with simulated_accelerator("npu"):
        looped, good = _run_both(runner_cls, FIXED_STATE, update_seq_lens_cpu)
        _, bad = _run_both(runner_cls, FIXED_STATE, broken)
        assert _views(good) == _views(looped)
        assert _views(bad) != _views(looped)


def test_writes_through_to_the_torch_tensor():
    seq_lens = torch.full((6,), -1, dtype=torch.int32)
    computed = torch.tensor([10, 20, 30, 40, 50, 60], dtype=torch.int32)
    update_seq_lens_cpu(
        seq_lens.numpy(), computed.numpy(), np.array([4, 0, 2]), np.array([1, 2, 3]),
        refreshed_slots=np.array([0]), source=np.array([7, 0, 0, 0, 0, 0], dtype=np.int32),
    )
    assert seq_lens.tolist() == [51, 9, 33, -1, -1, -1]
    assert computed.tolist() == [7, 20, 30, 40, 50, 60]


@pytest.mark.parametrize(
    ("n_mapping", "n_scheduled", "seq_len", "refresh_without_source"),
    [
        (3, 1, 6, False),  # NumPy would broadcast one count over every request
        (3, 2, 6, False),
        (5, 5, 4, False),  # more requests than seq_lens slots
        (2, 2, 6, True),  # slots to refresh but nothing to refresh them from
    ],
)
def test_bad_shapes_are_refused(n_mapping, n_scheduled, seq_len, refresh_without_source):
    with pytest.raises(ValueError):
        update_seq_lens_cpu(
            np.zeros(seq_len, dtype=np.int32),
            np.zeros(8, dtype=np.int32),
            np.arange(n_mapping),
            np.ones(n_scheduled, dtype=np.int32),
            refreshed_slots=np.array([0]) if refresh_without_source else None,
        )

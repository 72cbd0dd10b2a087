"""vLLM's real ``GPUModelRunner._to_list`` passes the probe; each mutant of it fails for its reason."""

import pytest
import torch

from vllm_syncgate.fakedev import simulated_accelerator
from vllm_syncgate.probes import ProblemCode, probe_to_list
from vllm_syncgate.probes.to_list import to_list_state


@pytest.fixture(scope="module")
def upstream_to_list():
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    return GPUModelRunner._to_list


@pytest.fixture(params=["cuda", "npu"])
def acc(request):
    with simulated_accelerator(request.param) as accelerator:
        yield accelerator


def test_upstream_to_list_uses_one_event_wait_and_no_readback(upstream_to_list, acc):
    runner = to_list_state(acc, buffer_rows=16)
    result = probe_to_list(upstream_to_list, runner, acc, num_reqs=16)
    assert result.passed, result.describe()
    assert result.counts == {"event_sync": 1}
    assert [e.site.function for e in result.events] == ["_to_list"]
    assert result.events[0].site.module == "vllm.v1.worker.gpu_model_runner"


# --- mutants: small variants of the method, each breaking one part of the contract -------------
def mutant_a_tolist_on_device(self, sampled_token_ids):
    return sampled_token_ids.tolist()


def mutant_c_read_before_event(self, sampled_token_ids):
    pinned = self.sampled_token_ids_pinned_cpu[: sampled_token_ids.shape[0]]
    pinned.copy_(sampled_token_ids, non_blocking=True)
    rows = pinned.tolist()
    self.transfer_event.record()
    self.transfer_event.synchronize()
    return rows


def mutant_d_device_synchronize(self, sampled_token_ids):
    pinned = self.sampled_token_ids_pinned_cpu[: sampled_token_ids.shape[0]]
    pinned.copy_(sampled_token_ids, non_blocking=True)
    self.transfer_event.record()
    self.transfer_event.synchronize()
    torch.accelerator.synchronize()
    return pinned.tolist()


def mutant_e_unpinned_staging(self, sampled_token_ids):
    staging = torch.empty_like(self.sampled_token_ids_pinned_cpu)[: sampled_token_ids.shape[0]]
    staging.copy_(sampled_token_ids, non_blocking=True)
    self.transfer_event.record()
    self.transfer_event.synchronize()
    return staging.tolist()


@pytest.mark.parametrize(
    ("mutant", "code", "line_of"),
    [
        (mutant_a_tolist_on_device, ProblemCode.BLOCKING_READBACK, "return sampled_token_ids.tolist()"),
        (mutant_c_read_before_event, ProblemCode.WRONG_VALUES, None),
        (mutant_d_device_synchronize, ProblemCode.UNEXPECTED_SYNC, "torch.accelerator.synchronize()"),
        (mutant_e_unpinned_staging, ProblemCode.BLOCKING_COPY, "staging.copy_("),
    ],
    ids=["a-tolist-on-device", "c-read-before-event", "d-device-synchronize", "e-non-blocking-unpinned"],
)
def test_mutant_is_caught(mutant, code, line_of, acc):
    runner = to_list_state(acc, buffer_rows=16)
    result = probe_to_list(mutant, runner, acc, num_reqs=16)
    assert not result.passed
    assert code in result.codes, result.describe()
    if line_of is not None:
        import inspect

        lines, start = inspect.getsourcelines(mutant)
        expected_line = start + next(i for i, text in enumerate(lines) if line_of in text)
        culprit = next(p for p in result.problems if p.code is code)
        assert culprit.site.endswith(f":{expected_line}:{mutant.__name__}")


def test_mutant_b_undersized_buffer_fails_a_full_batch(upstream_to_list, acc):
    """(max_model_len, 1) with max_num_reqs > max_model_len: a full batch cannot fit."""
    max_model_len, max_num_reqs = 8, 32
    runner = to_list_state(acc, buffer_rows=max_model_len)
    result = probe_to_list(upstream_to_list, runner, acc, num_reqs=max_num_reqs)
    assert not result.passed
    assert ProblemCode.RAISED in result.codes, result.describe()


def test_pinned_buffer_is_required_for_the_async_copy(upstream_to_list, acc):
    runner = to_list_state(acc, buffer_rows=4, pinned=False)
    result = probe_to_list(upstream_to_list, runner, acc, num_reqs=4)
    assert ProblemCode.BLOCKING_COPY in result.codes


def mutant_waits_twice(self, sampled_token_ids):
    pinned = self.sampled_token_ids_pinned_cpu[: sampled_token_ids.shape[0]]
    pinned.copy_(sampled_token_ids, non_blocking=True)
    self.transfer_event.record()
    self.transfer_event.synchronize()
    self.transfer_event.synchronize()
    return pinned.tolist()


def test_a_second_wait_is_counted_by_the_contract_cap(acc):
    """The contract allows one event wait per call (max_per_step), as the live budgets do."""
    result = probe_to_list(mutant_waits_twice, to_list_state(acc, buffer_rows=4), acc, num_reqs=4)
    assert result.codes == {ProblemCode.UNEXPECTED_SYNC}
    [problem] = result.problems
    assert problem.message == "more than one event wait"
    assert result.counts == {"event_sync": 2}

"""The pinned sampled-ids buffer of a real vLLM runner is (max_num_reqs, 1); the #22760 sizing is not."""

import pytest
import torch

from vllm_syncgate.probes import ProblemCode, probe_pinned_buffer


def test_real_cpu_runner_sizes_buffer_by_max_num_reqs(build_cpu_runner):
    runner = build_cpu_runner(max_num_reqs=8, max_model_len=256)
    buffer = runner.sampled_token_ids_pinned_cpu
    assert tuple(buffer.shape) == (runner.max_num_reqs, 1) == (8, 1)
    result = probe_pinned_buffer(buffer, max_num_reqs=runner.max_num_reqs, require_pinned=False)
    assert result.passed, result.describe()


def _size_like_pr_22760(runner):
    """Mutant (b): the buffer as first merged upstream, one row per token of the longest sequence."""
    runner.sampled_token_ids_pinned_cpu = torch.zeros((runner.max_model_len, 1), dtype=torch.int64)
    return runner


def test_mutant_b_buffer_too_small_when_batch_exceeds_model_len(build_cpu_runner):
    runner = _size_like_pr_22760(build_cpu_runner(max_num_reqs=64, max_model_len=32))
    result = probe_pinned_buffer(
        runner.sampled_token_ids_pinned_cpu, max_num_reqs=runner.max_num_reqs, require_pinned=False
    )
    assert result.codes == {ProblemCode.BUFFER_TOO_SMALL}


def test_mutant_b_buffer_is_waste_when_model_len_dwarfs_batch(build_cpu_runner):
    runner = _size_like_pr_22760(build_cpu_runner(max_num_reqs=4, max_model_len=512))
    result = probe_pinned_buffer(
        runner.sampled_token_ids_pinned_cpu, max_num_reqs=runner.max_num_reqs, require_pinned=False
    )
    assert result.codes == {ProblemCode.BUFFER_WASTE}
    assert "128x" in result.problems[0].message


@pytest.mark.parametrize("pinned", [True, False])
def test_unpinned_buffer_is_flagged_when_pinning_is_required(pinned):
    from vllm_syncgate.fakedev import simulated_accelerator

    with simulated_accelerator("cuda"):
        buffer = torch.zeros((4, 1), dtype=torch.int64, pin_memory=pinned)
        result = probe_pinned_buffer(buffer, max_num_reqs=4)
    assert (ProblemCode.NOT_PINNED in result.codes) is (not pinned)

"""The shipped probes on the installed vLLM pass; a broken ``_to_list`` or buffer fails them."""

import contextlib
import inspect

import pytest
import torch

from vllm_syncgate.unit.vllm_probes import installed_targets, probe_vllm


@pytest.fixture(scope="module")
def targets():
    return installed_targets()


@pytest.mark.slow
def test_installed_vllm_passes_every_probe(targets):
    report = probe_vllm("cuda", targets)
    assert report.passed, report.describe()
    assert [c.name for c in report.checks] == [
        "to_list", "async_output", "pinned_buffer[reqs=64,len=32]", "pinned_buffer[reqs=4,len=512]"]
    assert report.checks[0].target == "vllm.v1.worker.gpu_model_runner:GPUModelRunner._to_list"


def _tolist_on_device(self, sampled_token_ids):
    return sampled_token_ids.tolist()


@pytest.mark.slow
def test_a_blocking_to_list_fails_at_its_line(targets):
    import dataclasses

    broken = dataclasses.replace(targets, to_list=_tolist_on_device)
    checks = {c.name: c for c in probe_vllm("npu", broken).checks}
    assert not checks["to_list"].passed
    assert "blocking_readback" in checks["to_list"].detail
    _, start = inspect.getsourcelines(_tolist_on_device)
    assert checks["to_list"].site.endswith(f":{start + 1}:_tolist_on_device")
    assert checks["async_output"].passed


@pytest.mark.slow
def test_a_buffer_sized_by_model_len_fails_both_limits(targets):
    import dataclasses

    @contextlib.contextmanager
    def sized_like_pr_22760():
        with targets.runner_factory() as build:
            def mutant(max_num_reqs, max_model_len):
                runner = build(max_num_reqs, max_model_len)
                runner.sampled_token_ids_pinned_cpu = torch.zeros((max_model_len, 1), dtype=torch.int64)
                return runner
            yield mutant

    report = probe_vllm("cuda", dataclasses.replace(targets, runner_factory=sized_like_pr_22760))
    failed = {c.name: c.detail for c in report.failures()}
    assert set(failed) == {"pinned_buffer[reqs=64,len=32]", "pinned_buffer[reqs=4,len=512]"}
    assert failed["pinned_buffer[reqs=64,len=32]"].startswith("buffer_too_small")
    assert failed["pinned_buffer[reqs=4,len=512]"].startswith("buffer_waste")

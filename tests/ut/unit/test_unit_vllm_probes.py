"""The shipped probes on the installed vLLM pass; a broken ``_to_list``, buffer or helper of
``_update_states`` fails them."""

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
        "to_list", "async_output", "pinned_buffer[reqs=64,len=32]", "pinned_buffer[reqs=4,len=512]",
        "update_states[async]", "update_states[sync]"]
    assert report.checks[0].target == "vllm.v1.worker.gpu_model_runner:GPUModelRunner._to_list"
    for update in report.checks[-2:]:
        assert update.target == "vllm.v1.worker.gpu_model_runner:GPUModelRunner._update_states"
        # it ran on the simulated device: the sampling metadata's copies were issued asynchronously
        assert int(update.detail.split("'copy_h2d_async': ")[1].rstrip("}")) > 0, update.detail


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


# --- _update_states: mutants of its helpers, mixed in ahead of the real GPUModelRunner ------------
class ReadsDeviceInEncoderCacheFree:
    """A readback in the helper that frees encoder outputs, which _update_states calls every step."""

    def _process_encoder_cache_scheduler_output(self, scheduler_output):
        self.input_ids.gpu[:1].tolist()
        return super()._process_encoder_cache_scheduler_output(scheduler_output)


class ReadsDeviceWithoutAsyncScheduling:
    """A readback only where async scheduling is off, in the hook for finished requests."""

    def _on_request_state_removed(self, req_id, req_state):
        if not self.use_async_scheduling:
            self.input_ids.gpu[:1].tolist()
        return super()._on_request_state_removed(req_id, req_state)


class ReadsDeviceAllocation:
    """A readback of a tensor the runner allocates on its device (not a staged pair), every step."""

    def _update_states(self, scheduler_output):
        self.seq_lens[:1].tolist()
        return super()._update_states(scheduler_output)


class SynchronizesOnFinish:
    """A device synchronize in the hook _update_states calls for each finished request only."""

    def _on_request_state_removed(self, req_id, req_state):
        torch.accelerator.synchronize()
        return super()._on_request_state_removed(req_id, req_state)


def _with_mixin(targets, mixin):
    import dataclasses

    runner_class = type(f"{mixin.__name__}Runner", (mixin, targets.runner_class), {})
    return dataclasses.replace(targets, runner_class=runner_class)


@pytest.mark.slow
@pytest.mark.parametrize(("mixin", "method", "line", "modes", "expected"), [
    (ReadsDeviceInEncoderCacheFree, "_process_encoder_cache_scheduler_output", 1,
     ["async", "sync"], "blocking_readback: Tensor.tolist in 8/8 steps"),
    (ReadsDeviceAllocation, "_update_states", 1, ["async", "sync"],
     "blocking_readback: Tensor.tolist in 8/8 steps"),
    (SynchronizesOnFinish, "_on_request_state_removed", 1, ["async", "sync"],
     "unexpected_sync: device_sync via torch.accelerator.synchronize in 2/8 steps (first: step 5"),
    (ReadsDeviceWithoutAsyncScheduling, "_on_request_state_removed", 2, ["sync"],
     "blocking_readback: Tensor.tolist in 2/8 steps (first: step 5"),
])
def test_a_sync_in_a_helper_of_update_states_fails_at_its_line(targets, mixin, method, line, modes,
                                                               expected):
    checks = {c.name: c for c in probe_vllm("cuda", _with_mixin(targets, mixin)).checks}
    failing = [name for name, c in checks.items() if not c.passed]
    assert failing == [f"update_states[{mode}]" for mode in modes]
    _, start = inspect.getsourcelines(getattr(mixin, method))
    for name in failing:
        assert checks[name].detail.startswith(expected), checks[name].detail
        assert checks[name].site == f"{inspect.getsourcefile(mixin)}:{start + line}:{method}"

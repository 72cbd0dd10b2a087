"""Fixtures for the live-audit backends: a ledger, installed backends, runner-shaped classes.

The runner classes are written here in the shape of vLLM's (``execute_model`` then
``sample_tokens``, ``_model_forward``/``_sample``/``_to_list``), but the pieces the CPU backend has
to understand are vLLM's own: ``CPUModelRunner._to_list``/``_sync_device`` and the placeholder
swap ``_torch_cuda_wrapper`` from ``vllm.v1.worker.cpu_model_runner``.
"""

import types
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import torch

from vllm_syncgate.audit.backends import CpuBackend
from vllm_syncgate.audit.ledger import Ledger


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def vllm_cpu_runner_module():
    return pytest.importorskip("vllm.v1.worker.cpu_model_runner")


@pytest.fixture
def keep_accelerator(monkeypatch):
    """vLLM's CPU runner replaces torch.accelerator functions for good; undo that after a test."""
    for name in ("synchronize", "empty_cache"):
        monkeypatch.setattr(torch.accelerator, name, getattr(torch.accelerator, name))


@pytest.fixture
def cpu_backend(ledger, keep_accelerator) -> Iterator[CpuBackend]:
    backend = CpuBackend(ledger)
    backend.install()
    yield backend
    backend.uninstall()


@dataclass
class SamplerOutput:
    """Shaped like vllm.v1.outputs.SamplerOutput."""

    sampled_token_ids: torch.Tensor
    logprobs_tensors: tuple[torch.Tensor, ...] | None = None


def make_cpu_runner_module(vllm_cpu, base=object):
    """A module named like vLLM's CPU runner module, holding a runner-shaped class (derived from
    ``base``: vLLM's ``GPUModelRunner`` where a test needs the real class hierarchy)."""
    from vllm.v1.utils import CpuGpuBuffer

    module = types.ModuleType(vllm_cpu.__name__)
    module._torch_cuda_wrapper = vllm_cpu._torch_cuda_wrapper

    class CPUModelRunner(base):
        _to_list = vllm_cpu.CPUModelRunner._to_list
        _sync_device = vllm_cpu.CPUModelRunner._sync_device

        def __init__(self, speculative_config=None):
            vllm_cpu._set_torch_accelerator_to_noop()
            with module._torch_cuda_wrapper():
                self.transfer_event = torch.Event()
                self.num_accepted_tokens_event = torch.Event()
            self.vllm_config = types.SimpleNamespace(
                speculative_config=speculative_config,
                scheduler_config=types.SimpleNamespace(async_scheduling=False),
            )
            self.host_buffer = torch.zeros(4, dtype=torch.int64)
            self.input_ids = CpuGpuBuffer(4, dtype=torch.int64, device=torch.device("cpu"),
                                          pin_memory=False)
            self.input_ids.gpu = self.input_ids.cpu  # vllm-cpu's layout
            self.seq_lens = torch.zeros(4, dtype=torch.int64, device=torch.device("cpu"))

        in_step = None  # a test's host-side step code, run after the forward

        def execute_model(self, scheduler_output, intermediate_tensors=None):
            self.hidden = self._model_forward(scheduler_output.total_num_scheduled_tokens)
            if self.in_step is not None:
                self.in_step()
            if scheduler_output.total_num_scheduled_tokens == 0:
                return "empty output"
            return None

        def sample_tokens(self, grammar_output):
            self.sampled = self._sample(len(self.hidden))
            return self._to_list(self.sampled.sampled_token_ids)

        def _model_forward(self, num_tokens):
            return torch.ones(num_tokens, 8)

        def _sample(self, num_reqs):
            return SamplerOutput(torch.arange(num_reqs, dtype=torch.int64).reshape(-1, 1))

    module.CPUModelRunner = CPUModelRunner
    return module


@pytest.fixture
def cpu_runner_module():
    return make_cpu_runner_module


@pytest.fixture
def cpu_runner_class(cpu_backend, vllm_cpu_runner_module):
    module = make_cpu_runner_module(vllm_cpu_runner_module)
    cpu_backend.instrument_module(module)
    return module.CPUModelRunner


def scheduler_output(decode=(), prefill=()):
    """A scheduler-output-shaped object: decode requests have output tokens, prefill ones not."""
    reqs = [*decode, *prefill]
    return types.SimpleNamespace(
        num_scheduled_tokens=dict.fromkeys(reqs, 1),
        total_num_scheduled_tokens=len(reqs),
        scheduled_spec_decode_tokens={},
        scheduled_new_reqs=[types.SimpleNamespace(req_id=r) for r in prefill],
        scheduled_cached_reqs=types.SimpleNamespace(
            req_ids=list(decode), resumed_req_ids=set(), num_output_tokens=[1] * len(decode)
        ),
    )


@pytest.fixture
def make_scheduler_output():
    return scheduler_output

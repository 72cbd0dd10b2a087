"""A real vLLM ``CPUModelRunner`` built on CPU from a small ``VllmConfig``, as upstream's own
runner tests do: its ``__init__`` allocates the pinned sampled-ids buffer the GPU runner uses
(``CPUModelRunner`` is the V1 ``GPUModelRunner`` with CPU overrides), so buffer sizing can be
judged on real code without a device or a model's weights; :func:`on_simulated_device` puts its
state back on a (simulated) device, so its methods can be judged as a GPU runner runs them.
"""

from __future__ import annotations

import sys
import tempfile
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vllm_syncgate.audit.allocations import DeviceAllocations, DeviceTensors
from vllm_syncgate.audit.staged import staged_pairs
from vllm_syncgate.fakedev import SimulatedAccelerator
from vllm_syncgate.patching import Patches

TINY_CONFIG = Path(__file__).with_name("tiny_llama_config")
# runner -> its attributes allocated with device=self.device (found while :func:`cpu_runner_factory` built it)
_DEVICE_ATTRIBUTES: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()


def small_config(max_num_reqs: int, max_model_len: int) -> Any:
    """A ``VllmConfig`` for the tiny Llama config shipped here (no tokenizer, no weights)."""
    from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig

    model = ModelConfig(
        model=str(TINY_CONFIG), dtype="float32", skip_tokenizer_init=True,
        max_model_len=max_model_len, seed=0, enforce_eager=True,
    )
    scheduler = SchedulerConfig(
        max_num_seqs=max_num_reqs, max_num_batched_tokens=max(512, max_model_len),
        max_model_len=max_model_len, is_encoder_decoder=False,
    )
    return VllmConfig(
        model_config=model, scheduler_config=scheduler,
        cache_config=CacheConfig(block_size=16), device_config=DeviceConfig("cpu"),
    )


@contextmanager
def cpu_runner_factory() -> Iterator[Callable[[int, int], Any]]:
    """Yield ``build(max_num_reqs, max_model_len)``; the single-process distributed group (gloo,
    a file rendezvous in a temp dir) the runner needs exists for the block, and is torn down."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.distributed import (
        destroy_distributed_environment,
        destroy_model_parallel,
        ensure_model_parallel_initialized,
        init_distributed_environment,
    )
    from vllm.v1.worker.cpu_model_runner import CPUModelRunner

    def build(max_num_reqs: int, max_model_len: int) -> Any:
        config = small_config(max_num_reqs, max_model_len)
        allocated = DeviceTensors()
        with set_current_vllm_config(config), DeviceAllocations(allocated):
            runner = CPUModelRunner(config, torch.device("cpu"))
        _DEVICE_ATTRIBUTES[runner] = frozenset(
            name for name, value in vars(runner).items()
            if isinstance(value, torch.Tensor) and value in allocated)
        return runner

    with (tempfile.TemporaryDirectory(prefix="syncgate-dist-") as tmp,
          set_current_vllm_config(small_config(4, 64))):
        init_distributed_environment(
            world_size=1, rank=0, local_rank=0,
            distributed_init_method=f"file://{tmp}/rendezvous", backend="gloo",
        )
        ensure_model_parallel_initialized(1, 1)
        try:
            yield build
        finally:
            destroy_model_parallel()
            destroy_distributed_environment()


@contextmanager
def on_simulated_device(runner: Any, acc: SimulatedAccelerator) -> Iterator[Any]:
    """``runner`` laid out as the GPU runner is on a CUDA host, for the block.

    ``CPUModelRunner`` points every device half of its buffers at the host half; here each gets a
    device tensor of its own again and the host half is pinned, as ``GPUModelRunner`` allocates
    them, and what the runner allocated with ``device=self.device`` (``self.seq_lens``) moves to
    the device, and vLLM's modules see pinned memory as available (``PIN_MEMORY``, read once at import,
    is false on a CPU host): a copy the GPU runner issues asynchronously is then asynchronous here
    too, and a read of device state is a recorded readback, not a free host read.
    """
    for pair in staged_pairs(runner):
        pair.set_device(acc.device_tensor(acc.mark_pinned(pair.host)))
    for name in _DEVICE_ATTRIBUTES.get(runner, ()):
        setattr(runner, name, acc.device_tensor(getattr(runner, name)))
    batch = runner.input_batch
    runner.device = batch.device = acc.device
    patches = Patches()
    for name, module in list(sys.modules.items()):
        if name.startswith("vllm.") and isinstance(getattr(module, "PIN_MEMORY", None), bool):
            patches.set(module, "PIN_MEMORY", True)
    try:
        yield runner
    finally:
        patches.restore()

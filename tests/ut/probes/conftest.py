"""A real vLLM runner built on CPU with a small VllmConfig, as upstream's own runner tests do.

vLLM's ``CPUModelRunner`` is the V1 ``GPUModelRunner`` with CPU overrides, so its ``__init__``
allocates the same pinned sampled-ids buffer the GPU runner uses. The distributed group is
initialised once per session (gloo, a file rendezvous in a temp dir) and torn down at the end.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

TINY_CONFIG = Path(__file__).parents[2] / "data" / "probes" / "tiny_llama_config"


def _small_config(max_num_reqs: int, max_model_len: int):
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


@pytest.fixture(scope="session")
def build_cpu_runner() -> Iterator:
    """Factory: a real ``CPUModelRunner`` for the given batch and length limits."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.distributed import (
        destroy_distributed_environment,
        destroy_model_parallel,
        ensure_model_parallel_initialized,
        init_distributed_environment,
    )
    from vllm.v1.worker.cpu_model_runner import CPUModelRunner

    def build(max_num_reqs: int, max_model_len: int) -> CPUModelRunner:
        config = _small_config(max_num_reqs, max_model_len)
        with set_current_vllm_config(config):
            return CPUModelRunner(config, torch.device("cpu"))

    with tempfile.TemporaryDirectory(prefix="syncgate-dist-") as tmp, set_current_vllm_config(_small_config(4, 64)):
        init_distributed_environment(
            world_size=1, rank=0, local_rank=0, distributed_init_method=f"file://{tmp}/rendezvous", backend="gloo"
        )
        ensure_model_parallel_initialized(1, 1)
        try:
            yield build
        finally:
            destroy_model_parallel()
            destroy_distributed_environment()

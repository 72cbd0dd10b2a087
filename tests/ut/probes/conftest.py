"""A real vLLM runner built on CPU with a small VllmConfig (vllm_syncgate.unit.cpu_runner)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def build_cpu_runner() -> Iterator:
    """Factory: a real ``CPUModelRunner`` for the given batch and length limits."""
    from vllm_syncgate.unit.cpu_runner import cpu_runner_factory

    with cpu_runner_factory() as build:
        yield build

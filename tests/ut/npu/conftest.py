"""Fixtures for the NPU harness tests: source trees (fixture, mutants, 'before' sdist, env tree).

``SYNCGATE_ASCEND_SOURCE`` names a vllm-ascend checkout at or after PR #13382 (the ``ut-npu``
compose service sets it to the image's tree); the seq-lens sync tests then also run against it, parsed
and, where ``vllm_ascend`` imports from it, as the real class.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from vllm_syncgate.npu import torch_npu_stub
from vllm_syncgate.npu.harness import AscendSource, importable_from, load_runner_class
from vllm_syncgate.npu.parent import SimulatedGPUModelRunner

DATA = Path(__file__).resolve().parents[2] / "data" / "npu"
AFTER_FIX = DATA / "after_fix"
RUNNER_FILE = Path("vllm_ascend", "worker", "v2", "model_runner.py")

# Modest and deterministic: CI runs this on two cores and must not flake.
settings.register_profile(
    "syncgate-npu", max_examples=20, derandomize=True, deadline=None, database=None,
    # Fixtures here hand out classes and source trees, which no example mutates.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

@pytest.fixture
def after_fix_source() -> AscendSource:
    return AscendSource.at(AFTER_FIX)


@pytest.fixture
def before_source(ascend_before_source: Path) -> AscendSource:
    return AscendSource.at(ascend_before_source)


@pytest.fixture
def env_source() -> AscendSource:
    root = os.environ.get("SYNCGATE_ASCEND_SOURCE")
    if not root:
        pytest.skip("SYNCGATE_ASCEND_SOURCE is not set (set it to a vllm-ascend checkout)")
    return AscendSource.at(root)


@pytest.fixture
def mutant_source(tmp_path: Path) -> Callable[[str, str], AscendSource]:
    """A copy of the after-fix tree with one exact piece of its runner source replaced."""

    def make(old: str, new: str) -> AscendSource:
        root = tmp_path / "mutant"
        shutil.copytree(AFTER_FIX, root)
        path = root / RUNNER_FILE
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"mutation target not found exactly once: {old!r}"
        path.write_text(text.replace(old, new), encoding="utf-8")
        return AscendSource.at(root)

    return make


@pytest.fixture
def on_import_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], None]]:
    """Make a fixture tree's ``vllm_ascend`` importable for one test; forget it afterwards, so it
    never shadows a real ``vllm_ascend`` in a later test."""
    before = set(sys.modules)
    yield lambda root: monkeypatch.syspath_prepend(str(root))
    for name in set(sys.modules) - before:
        if name.split(".")[0] == "vllm_ascend":
            del sys.modules[name]


@pytest.fixture(params=[
    "fixture-ast",
    pytest.param("fixture-import", marks=pytest.mark.slow),  # imports vLLM's GPUModelRunner
    "env-ast",
    "env-import",
])
def after_runner(request: pytest.FixtureRequest, on_import_path) -> type:
    """A runner class in the shape of the fix: the fixture tree or the env tree, each parsed
    (ast) and imported as the real class (import)."""
    tree, mode = request.param.split("-")
    if tree == "fixture":
        source = AscendSource.at(AFTER_FIX)
        if mode == "import":
            on_import_path(AFTER_FIX)
    else:
        source = request.getfixturevalue("env_source")
    if mode == "import" and not importable_from(source):
        pytest.skip(f"vllm_ascend does not import from {source.root} here")
    if mode == "import" and tree == "env" and shutil.which("npu-smi") is None:
        torch_npu_stub.install()  # upstream's recipe for its CPU unit tests: no NPU, stub torch_npu
    return load_runner_class(source, SimulatedGPUModelRunner, mode=mode)

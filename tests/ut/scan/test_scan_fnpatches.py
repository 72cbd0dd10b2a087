"""A plugin's module-level patch of an upstream function (vllm-ascend's patch_triton sets
``vllm.model_executor.layers.fla.ops.chunk_gated_delta_rule`` to its own): a call of the
upstream name runs the plugin's function, and a parameter read before the function rebinds it
(``cu = cu.cpu()``) is still what the callers pass. Fixture: tests/data/scan/fnpatches (the
upstream module is not scanned). Broken variants lose the marked line."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, values
from vllm_syncgate.scan.callgraph import scan

ENTRY = ["PatchedModelRunner.execute_model"]


@pytest.fixture
def plugin(scan_data: Path) -> Path:
    return scan_data / "fnpatches" / "plugin"


def _reported(root: Path) -> set[tuple[str, int, str, str]]:
    return {(Path(f.file).name, f.line, f.kind, f.guard)
            for f in scan([str(root)], entries=ENTRY, device="npu").findings}


def test_the_patched_function_fails_at_the_marked_line(plugin, expected_sites):
    expected = expected_sites(plugin)
    assert len(expected) == 1
    assert _reported(plugin) == expected


def test_broken_variant_without_the_function_patches(plugin, monkeypatch, expected_sites):
    monkeypatch.setattr(callgraph, "_patched_functions", lambda index: {})
    (site,) = expected_sites(plugin)
    assert site not in _reported(plugin)


def test_broken_variant_a_rebound_parameter_never_asks_its_callers(plugin, monkeypatch,
                                                                  expected_sites):
    monkeypatch.setattr(values.ValueModel, "_before_rebinding", lambda self, node: False)
    (site,) = expected_sites(plugin)
    assert site not in _reported(plugin)

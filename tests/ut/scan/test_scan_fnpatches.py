"""A plugin's module-level patch of an upstream function (vllm-ascend's patch_triton sets
``vllm.model_executor.layers.fla.ops.chunk_gated_delta_rule`` to its own): a call of the
upstream name runs the plugin's function, and a parameter read before the function rebinds it
(``cu = cu.cpu()``) is still what the callers pass. Fixture: tests/data/scan/fnpatches (the
upstream module is not scanned). Broken variants lose the marked line."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, values

ENTRY = ["PatchedModelRunner.execute_model"]


@pytest.fixture
def plugin(scan_data: Path) -> Path:
    return scan_data / "fnpatches" / "plugin"


@pytest.fixture
def reported(sites_of):
    return lambda path: sites_of(path, ENTRY, "npu")


def test_the_patched_function_fails_at_the_marked_line(reported, plugin, expected_sites):
    expected = expected_sites(plugin)
    assert len(expected) == 1
    assert reported(plugin) == expected


def test_broken_variant_without_the_function_patches(reported, plugin, monkeypatch, expected_sites):
    monkeypatch.setattr(callgraph, "_patched_functions", lambda index: {})
    (site,) = expected_sites(plugin)
    assert site not in reported(plugin)


def test_broken_variant_a_rebound_parameter_never_asks_its_callers(reported, plugin, monkeypatch,
                                                                  expected_sites):
    monkeypatch.setattr(values.ValueModel, "_before_rebinding", lambda self, node: False)
    (site,) = expected_sites(plugin)
    assert site not in reported(plugin)

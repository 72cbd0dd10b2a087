"""The default-path syncs the scan missed on the first held-out split, and the mode guards it
misjudged (issue 20), on a runner of our own (tests/data/scan/gaps). Each rule family is broken
on purpose and shown to fail the fixture at the lines its marker names.

Markers: ``# expect: KIND GUARD FAMILY``; the family tag says which rule must report the line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, guards, rules, values
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.config import load_config
from vllm_syncgate.scan.guards import GuardEvaluator
from vllm_syncgate.scan.values import Facts

ENTRY = ["GapModelRunner.execute_model"]


@pytest.fixture
def gaps(scan_data: Path) -> Path:
    return scan_data / "gaps" / "gappkg"


def _reported(root: Path) -> set[tuple[str, int, str, str]]:
    result = scan([str(root / "worker")], entries=ENTRY)
    return {(Path(f.file).name, f.line, f.kind, f.guard) for f in result.findings}


def _needs_vllm() -> None:
    guards.installed_opt_ins.cache_clear()
    guards.installed_defaults.cache_clear()
    if not guards.installed_opt_ins():
        pytest.skip("vllm is not installed: the config defaults come from it")


def test_gaps_fixture_reports_exactly_the_marked_sites(gaps, marked_families):
    _needs_vllm()
    expected = marked_families(gaps)
    assert len(expected) >= 12
    assert len(set(expected.values())) >= 7
    assert _reported(gaps) == set(expected)


def test_every_gap_finding_says_why_citing_the_measurements(gaps):
    result = scan([str(gaps / "worker")], entries=ENTRY)
    by_api = {f.api: f.why for f in result.findings}
    for finding in result.findings:
        assert "gpu-physics.md §" in finding.why, (finding.api, finding.why)
    assert "pinned buffer does not help" in by_api["Tensor.copy_(host, dtype change)"]
    assert "pageable" in by_api["Tensor.to(device) from a gather"]
    assert {f.qualname for f in result.findings} >= {"MirroredView.dev", "HostMirror.upload"}
    assert "iterates" in by_api["max() of a tensor"]


def _nothing(*_args, **_kwargs):
    return []


def _no_defaults(_sources=()):
    return {}


# Each rule family broken on purpose: the families whose marked lines it must lose.
BROKEN = {
    # the dtype of either side unknown: an int64 -> int32 copy looks like a plain DMA
    "dtype-changing copies": (lambda m: m.setattr(values.ValueModel, "dtype", lambda *a: None),
                              {"dtype"}),
    # self.input_batch.block_table.method() and `for t in self.tables: t.method()` not followed
    "calls through attribute chains and lists": (
        lambda m: m.setattr(callgraph._Analysis, "_chain_calls", _nothing), {"dtype"}),
    # self.forward = self.forward_native not followed: the sampler's op is never entered
    "methods bound in __init__": (
        lambda m: m.setattr(callgraph._Analysis, "_bound_methods", _nothing), {"readback"}),
    # max(t) / min(t) of a device tensor: compares element by element on the host
    "builtins that iterate a tensor": (
        lambda m: m.setattr(rules.FunctionWalker, "_iterated", lambda *a: None), {"readback"}),
    # int()/float() of a parameter's reduction: the callers' arguments decide
    "scalar readbacks of parameters": (
        lambda m: m.setattr(values.ValueModel, "derived", lambda *a: None), {"readback"}),
    # buf[rows] with a list of rows gathers into a new pageable tensor
    "gathers from pinned buffers": (
        lambda m: m.setattr(values.ValueModel, "gathers", lambda *a: False), {"gather"}),
    # a device buffer indexed by a Python list taken for free: the list's upload passes
    "index uploads": (
        lambda m: m.setattr(rules.FunctionWalker, "_list_index", lambda *a: None), {"index"}),
    # torch.cat / arange(n) * k of host tensors taken for views: their pageable uploads pass
    "results of host tensor ops": (
        lambda m: m.setattr(values.ValueModel, "host_result", lambda *a: False), {"hostop"}),
    # a plugin's module-level patch of a class ignored: the pool's items stay vLLM's class
    "classes patched at module level": (
        lambda m: m.setattr(callgraph, "_patched_classes", lambda *a: {}), {"patched"}),
    # view.dev read as plain data: the property's upload never runs
    "properties read": (lambda m: m.setattr(callgraph, "_is_property", lambda *a: False),
                        {"patched"}),
    # x.to(dtype) of a host tensor taken for a device copy: the later .to(device) looks D2D
    "dtype conversions keep the residence": (
        lambda m: m.setattr(values, "moves_to_device", lambda *a: True), {"mask"}),
    # cudagraph_mode == PIECEWISE evaluated as unknown: the PIECEWISE-only sync fails
    "graph-mode guards": (
        lambda m: m.setattr(GuardEvaluator, "_graph_mode", lambda *a: None), {"graph"}),
    # only bool / None defaults read: a "none" mode and an int 0 look like unknowns
    "switch defaults from vLLM's config": (
        lambda m: m.setattr(guards, "installed_defaults", _no_defaults), {"switch"}),
}


@pytest.mark.parametrize("family", sorted(BROKEN))
def test_a_broken_rule_family_fails_the_gaps_fixture(gaps, lost_families, monkeypatch, family):
    _needs_vllm()
    breaks, lost = BROKEN[family]
    breaks(monkeypatch)
    missing = lost_families(gaps, _reported(gaps))
    assert lost <= missing, (family, missing)


CONFIG = load_config()


def _truth(expression: str) -> tuple[bool | None, str | None]:
    result = GuardEvaluator(CONFIG, Facts()).evaluate(ast.parse(expression, mode="eval").body)
    return result.value, result.guard.value if result.guard else None


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # the config's graph mode is FULL_AND_PIECEWISE unless a user picks another
        ("self.compilation_config.cudagraph_mode == CUDAGraphMode.PIECEWISE", (False, "opt_in")),
        ("self.compilation_config.cudagraph_mode != CUDAGraphMode.PIECEWISE", (True, "opt_in")),
        ("compilation_config.cudagraph_mode == CUDAGraphMode.FULL_AND_PIECEWISE", (True, "opt_in")),
        ("cudagraph_mode == CUDAGraphMode.FULL", (None, None)),  # a local may be a runtime mode
        ("self.compilation_config.cudagraph_mode != CUDAGraphMode.NONE", (True, "opt_in")),
        # a runtime mode is decided per batch (FULL for decode, PIECEWISE for mixed): no guard
        ("runtime_mode == CUDAGraphMode.FULL", (None, None)),
        ("self.aclgraph_runtime_mode == CUDAGraphMode.PIECEWISE", (None, None)),
        # switches whose default is off but no bool
        ("self.cache_config.mamba_cache_mode != 'none'", (False, "opt_in")),
        ("self.cache_config.mamba_cache_mode == 'none'", (True, "opt_in")),
        ("self.cache_config.mamba_cache_mode == 'all'", (False, "opt_in")),
        ("cc.encoder_cudagraph_max_vision_items_per_batch > 0", (False, "opt_in")),
        ("cc.encoder_cudagraph_max_vision_items_per_batch", (False, "opt_in")),
        # a default that is resolved at run time ("auto") says nothing
        ("self.cache_config.cache_dtype == 'fp8'", (None, None)),
        ("mamba_cache_mode != 'none'", (None, None)),  # a bare local is not the config field
        # an opt-in switch compared with an "on" value; a product of sizes that are 1 by default
        ("get_ascend_config().enable_async_exponential == 1", (False, "opt_in")),
        ("self.dcp_world_size * self.pcp_world_size > 1", (False, "opt_in")),
        ("self.dcp_world_size * num_reqs > 1", (None, None)),
    ],
)
def test_mode_and_switch_guards_from_the_installed_config(expression, expected):
    _needs_vllm()
    assert _truth(expression) == expected

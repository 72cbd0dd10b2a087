"""Uploads of a host copy made with ``x.cpu()`` (issue 20 item 1; vllm-ascend's 310P sampler drew
its noise that way): the copy is a new tensor in pageable memory, so its upload blocks, also
where the name is rebound to the upload (``q = q.npu()``) and where only the helper's callers
say the tensor was on the device; ``.cpu()`` of a pinned host buffer is the buffer itself.
Fixture: tests/data/scan/cpucopies. Broken variants lose the marked lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vllm_syncgate.scan import rules, values
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.values import Pin

ENTRY = ["NoiseModelRunner.execute_model"]


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "cpucopies" / "sample_runner.py"


def _uploads(path: Path) -> set[tuple[str, int, str, str]]:
    """Failing or reported host-to-device copies (the readbacks of the fixture aside)."""
    return {(Path(f.file).name, f.line, f.kind, f.guard)
            for f in scan([str(path)], entries=ENTRY, device="npu").findings
            if "(device)" in f.api}


def test_uploads_of_cpu_copies_fail_exactly_at_the_marked_lines(runner, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 4
    assert _uploads(runner) == expected


def test_the_untyped_helper_names_the_caller_that_passes_a_device_tensor(runner):
    finding = next(f for f in scan([str(runner)], entries=ENTRY, device="npu").findings
                   if f.qualname == "_sample_untyped" and "(device)" in f.api)
    assert "passes a device value as 'probs'" in finding.reason


def _line_of(path: Path, function: str) -> int:
    tree = ast.parse(path.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    return node.lineno


def test_broken_variant_cpu_copies_of_unknown_pinning_miss_the_direct_uploads(runner, monkeypatch):
    original = values.ValueModel.pin

    def pin(self, node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("cpu", "to"):
            return Pin.UNKNOWN  # as before: nothing known about the copy's memory
        return original(self, node)

    monkeypatch.setattr(values.ValueModel, "pin", pin)
    # a copy of a local device tensor: no caller to ask, only the copy's memory says it blocks
    local = _line_of(runner, "_sample_local") + 3
    assert local not in {line for _, line, _, _ in _uploads(runner)}


def test_broken_variant_a_rebinding_to_the_upload_hides_the_host_copys_pin(runner, monkeypatch,
                                                                          expected_sites):
    original = values.ValueModel.pin

    def pin(self, node):
        if isinstance(node, ast.Name):  # as before: every binding must agree, the device one too
            pins = {original(self, v) for v, how in self.bound_to(node.id)
                    if how is None and v is not None}
            return pins.pop() if len(pins) == 1 else Pin.UNKNOWN
        return original(self, node)

    monkeypatch.setattr(values.ValueModel, "pin", pin)
    rebound = _line_of(runner, "_sample_rebound") + 3
    assert ("sample_runner.py", rebound, "blocking_copy", "none") in expected_sites(runner)
    # the upload still fails as a copy without non_blocking (test_scan_syncuploads), but no
    # longer as one from pageable memory
    assert rebound not in {f.line for f in scan([str(runner)], entries=ENTRY, device="npu").findings
                           if "from pageable" in f.api}


def test_broken_variant_without_the_callers_the_untyped_helper_passes(runner, monkeypatch):
    monkeypatch.setattr(rules.FunctionWalker, "_host_copy_of_param", lambda *a: None)
    untyped = _line_of(runner, "_sample_untyped") + 4
    assert untyped not in {line for _, line, _, _ in _uploads(runner)}

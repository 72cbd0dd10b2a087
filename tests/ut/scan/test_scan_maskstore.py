"""Stores through a boolean mask (``x[~has_state, ...] = 0``) as data-dependent readbacks
(issue 20 item 1), on a runner of our own (tests/data/scan/maskstore): every device for a device
value, all but CUDA and the CPU for a Python number (CUDA's ``__setitem__`` keeps the number on
the host and ``index_put_`` becomes ``masked_fill_``). Broken variants lose the lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vllm_syncgate.scan import rules
from vllm_syncgate.scan.callgraph import scan

ENTRY = ["MaskModelRunner.execute_model"]
_MARK = re.compile(r"#\s*(expect|npu):\s*(\w+)\s+(\w+)")


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "maskstore" / "mask_runner.py"


def _marked(path: Path, device: str) -> set[tuple[int, str, str]]:
    found = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = _MARK.search(line)
        if match and (match.group(1) == "expect" or device not in ("cuda", "cpu")):
            found.add((number, match.group(2), match.group(3)))
    return found


def _reported(path: Path, device: str) -> set[tuple[int, str, str]]:
    return {(f.line, f.kind, f.guard)
            for f in scan([str(path)], entries=ENTRY, device=device).findings}


@pytest.mark.parametrize("device", ["npu", "cuda", "cpu", ""])
def test_mask_stores_fail_where_the_device_reads_the_mask(runner, device):
    expected = _marked(runner, device)
    assert len(expected) == (3 if device in ("npu", "") else 1)
    assert _reported(runner, device) == expected


def test_a_mask_store_says_why_citing_the_measurement(runner):
    finding = next(f for f in scan([str(runner)], entries=ENTRY, device="npu").findings
                   if f.api == "Tensor.__setitem__(bool mask)")
    assert "nonzero" in finding.why
    assert "gpu-physics.md §1" in finding.why
    assert "masked_fill_" in finding.why


def test_broken_variant_without_the_store_rule_misses_every_marked_line(runner, monkeypatch):
    monkeypatch.setattr(rules.FunctionWalker, "_mask_store", lambda *a: None)
    assert _reported(runner, "npu") == set()
    assert _marked(runner, "npu")


def test_broken_variant_that_ignores_the_device_fails_cuda_on_number_fills(runner, monkeypatch):
    # taking every device for one that reads the mask back: CUDA's masked_fill_ path is lost
    monkeypatch.setattr("vllm_syncgate.scan.callgraph._HOST_SCALAR_FILL", ())
    assert _reported(runner, "cuda") != _marked(runner, "cuda")
    assert _reported(runner, "cuda") == _marked(runner, "npu")

"""Host-to-device copies without ``non_blocking=True`` (issue 20 item 1; vLLM 0.11.0's Mamba1
builder uploaded the runner's pinned computed-token counts with a plain ``.to(device)``): the
copy is synchronous, so the host waits for it and for the stream ahead of it, pinned or not.
Fixture: tests/data/scan/syncuploads. Broken variants lose the marked lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import rules
from vllm_syncgate.scan.callgraph import scan

ENTRY = ["UploadModelRunner.execute_model"]


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "syncuploads" / "upload_runner.py"


@pytest.fixture
def reported(sites_of):
    return lambda path: sites_of(path, ENTRY, "cuda")


def test_uploads_without_non_blocking_fail_exactly_at_the_marked_lines(reported, runner, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 3
    assert reported(runner) == expected


def test_the_reason_cites_the_measurement(runner):
    finding = next(f for f in scan([str(runner)], entries=ENTRY, device="cuda").findings
                   if f.qualname == "UploadModelRunner._build")
    assert "without non_blocking" in finding.api
    assert "gpu-physics.md" in rules.explain(finding.api)


def test_broken_variant_a_missing_non_blocking_taken_as_queued_loses_them(reported, runner, monkeypatch,
                                                                         expected_sites):
    original = rules.is_true
    monkeypatch.setattr(rules, "is_true", lambda node: node is None or original(node))
    assert not reported(runner) & expected_sites(runner)


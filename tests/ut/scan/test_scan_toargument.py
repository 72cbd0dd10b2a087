"""A helper that returns ``t.to(param)`` hands back a tensor where the caller's argument lives
(vllm-ascend's FLA wrappers: ``prepare_chunk_indices(cu_seqlens.cpu(), 64)`` ends in
``.to(cu_seqlens)``): judged for a call that passes a host tensor, the result is a host
tensor, so the wrapper's ``.npu()`` / ``.cuda()`` of it is a synchronous upload. Fixture:
tests/data/scan/toargument. The broken variant (``.to(param)`` always of unknown residence,
the engine before this rule) loses the upload."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import values
from vllm_syncgate.scan.callgraph import scan

ENTRY = ["TileModelRunner.execute_model"]


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "toargument" / "tile_runner.py"


def _reported(path: Path) -> set[tuple[str, int, str, str]]:
    return {(Path(f.file).name, f.line, f.kind, f.guard)
            for f in scan([str(path)], entries=ENTRY, device="cuda").findings}


def test_the_upload_of_a_table_made_where_a_host_argument_lives_fails(runner, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 2
    assert _reported(runner) == expected


def test_broken_variant_to_a_parameter_always_unknown(runner, monkeypatch, expected_sites):
    monkeypatch.setattr(values.ValueModel, "_to_argument",
                        lambda self, target: values.Place.UNKNOWN)
    upload = next(site for site in expected_sites(runner) if site[2] == "blocking_copy")
    assert upload not in _reported(runner)

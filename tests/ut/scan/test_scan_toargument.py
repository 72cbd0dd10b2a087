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

ENTRY = ["TileModelRunner.execute_model"]


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "toargument" / "tile_runner.py"


@pytest.fixture
def reported(sites_of):
    return lambda path: sites_of(path, ENTRY, "cuda")


def test_the_upload_of_a_table_made_where_a_host_argument_lives_fails(reported, runner, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 2
    assert reported(runner) == expected


def test_broken_variant_to_a_parameter_always_unknown(reported, runner, monkeypatch, expected_sites):
    monkeypatch.setattr(values.ValueModel, "_to_argument",
                        lambda self, target: values.Place.UNKNOWN)
    upload = next(site for site in expected_sites(runner) if site[2] == "blocking_copy")
    assert upload not in reported(runner)

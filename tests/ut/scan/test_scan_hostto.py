"""A pageable host tensor sent ``.to(t)`` where the caller's ``t`` is a host tensor stays on the
host, pageable (FLA's ``prepare_chunk_indices`` returns ``torch.stack(...).to(cu_seqlens)``; the
GDN builders upload it with ``non_blocking=True`` every prefill step, which blocks: split 15's
1Cat-vLLM site, the sweep's vLLM 0.20-0.23 and vllm-ascend 0.23 chunk-index uploads). A pinned
source stays unjudged: ``.to(t)`` may return it as it is. Fixture: tests/data/scan/hostto.
Broken variant: without the rule the upload passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import values

ENTRY: list[str] = []


@pytest.fixture
def hostto(scan_data: Path) -> Path:
    return scan_data / "hostto"


@pytest.fixture
def expected(hostto: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(hostto)
    assert len(found) == 1
    return found


def test_pageable_table_upload_fails_pinned_one_does_not(sites_of, hostto, expected):
    assert sites_of(hostto, ENTRY, "cuda") == expected


def test_broken_variant_to_a_host_tensor_not_pageable(sites_of, hostto, monkeypatch):
    monkeypatch.setattr(values.ValueModel, "stays_pageable", lambda self, call: False)
    assert sites_of(hostto, ENTRY, "cuda") == set()

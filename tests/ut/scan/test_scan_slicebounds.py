"""A slice bound taken from one element of a device tensor (``query[:query_start_loc[-1]]``,
``out[:starts.sum()]``) is an ``__index__``: the host reads the element back, in every layer
that unpads that way (a vllm-ascend attention forward did, split 9). The same bound from the
host twin, an ``int`` field or a list is free. Fixture: tests/data/scan/slicebounds. Broken
variant: without the rule both sites are lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import rules

ENTRY: list[str] = []


@pytest.fixture
def backend(scan_data: Path) -> Path:
    return scan_data / "slicebounds" / "bound_attn.py"


def test_device_element_as_slice_bound_is_a_readback(sites_of, backend, expected_sites):
    expected = expected_sites(backend)
    assert len(expected) == 2
    assert sites_of(backend, ENTRY, "cuda") == expected


def test_broken_variant_no_slice_bound_rule(sites_of, backend, expected_sites, monkeypatch):
    monkeypatch.setattr(rules.FunctionWalker, "_device_scalar", lambda self, node, depth: False)
    assert not sites_of(backend, ENTRY, "cuda") & expected_sites(backend)

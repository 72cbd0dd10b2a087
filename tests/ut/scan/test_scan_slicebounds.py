"""A slice bound taken from one element of a device tensor (``query[:query_start_loc[-1]]``,
``out[:starts.sum()]``) is an ``__index__``: the host reads the element back, in every layer
that unpads that way (a vllm-ascend attention forward did, split 9). The same bound from the
host twin, an ``int`` field or a list is free. An element picked by a ``range`` loop's index
(``query[starts[i]:starts[i + 1]]``, Kunlun's GDN reference loop, split 15) is one too.
Fixture: tests/data/scan/slicebounds. Broken variants: without the rule every site is lost;
with constant indices only, the loop's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vllm_syncgate.scan import rules

ENTRY: list[str] = []


@pytest.fixture
def backend(scan_data: Path) -> Path:
    return scan_data / "slicebounds" / "bound_attn.py"


def test_device_element_as_slice_bound_is_a_readback(sites_of, backend, expected_sites):
    expected = expected_sites(backend)
    assert len(expected) == 3
    assert sites_of(backend, ENTRY, "cuda") == expected


def test_broken_variant_no_slice_bound_rule(sites_of, backend, expected_sites, monkeypatch):
    monkeypatch.setattr(rules.FunctionWalker, "_device_scalar", lambda self, node, depth: False)
    assert not sites_of(backend, ENTRY, "cuda") & expected_sites(backend)


def test_broken_variant_constant_indices_only(sites_of, backend, expected_sites, monkeypatch):
    monkeypatch.setattr(rules.FunctionWalker, "element_index",
                        lambda self, key: isinstance(key, ast.Constant) or (
                            isinstance(key, ast.UnaryOp) and isinstance(key.operand, ast.Constant)))
    lost = expected_sites(backend) - sites_of(backend, ENTRY, "cuda")
    assert [site[1] for site in lost] == [_line(backend, "query[starts[i]:starts[i + 1]]")]


def _line(backend: Path, text: str) -> int:
    (number,) = [n for n, t in enumerate(backend.read_text().splitlines(), start=1) if text in t]
    return number

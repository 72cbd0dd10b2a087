"""A layer's ``forward`` that enters its own ``_forward`` through a registered custom op
(``torch.ops.vllm.gdn_attention(...)``; the op's function, registered with
``direct_register_custom_op``, fetches the layer from the forward context and calls
``self._forward``) is followed into that method, and a function an ops package's ``__init__``
re-exports (``from .chunk import chunk_gated_delta_rule``) resolves to its definition: split 15's
Kunlun Qwen3-Next GDN prefill (baidu/vLLM-Kunlun a4b9e92ca1), found after that split was scored.
Fixture: tests/data/scan/customops. Broken variants: without either, the readback is never
reached."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, sources

ENTRY: list[str] = []


@pytest.fixture
def tree(scan_data: Path) -> Path:
    return scan_data / "customops" / "coplayers"


@pytest.fixture
def expected(tree: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(tree / "ops" / "scan_chunk.py")
    assert len(found) == 1
    return found


def test_the_op_reaches_the_layers_forward_and_the_reexported_kernel(sites_of, tree, expected):
    assert sites_of(tree, ENTRY, "cuda") == expected


def test_broken_variant_custom_ops_not_followed(sites_of, tree, monkeypatch):
    monkeypatch.setattr(callgraph, "_custom_ops", lambda index: {})
    assert sites_of(tree, ENTRY, "cuda") == set()


def test_broken_variant_reexports_not_followed(sites_of, tree, monkeypatch):
    monkeypatch.setattr(sources.SourceIndex, "_reexported", lambda self, target: None)
    assert sites_of(tree, ENTRY, "cuda") == set()

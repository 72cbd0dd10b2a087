"""A codec stage's syncs hide behind Python containers and object factories (vLLM-Omni's Fish
Speech and MiMo-Audio decoders, split 12): a lengths tensor placed on ``valid[0].device`` where
``valid`` is a list the step appends device slices to; a quantizer reached through a tokenizer
that an inherited ``from_pretrained`` builds, held by a worker that a cache getter hands out
(only its annotations say what it holds); a vocoder built by a classmethod's ``return cls(...)``.
Fixture: tests/data/scan/codecs. Broken variants: without appended items the two readbacks are
lost; without alternative constructors the quantizer's and the vocoder's uploads; without
declared classes the quantizer's."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, values

ENTRY: list[str] = []


@pytest.fixture
def codecs(scan_data: Path) -> Path:
    return scan_data / "codecs"


@pytest.fixture
def expected(codecs: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(codecs)
    assert len(found) == 5
    return found


def _lines(codecs: Path, name: str, *texts: str) -> set[tuple[str, int, str, str]]:
    lines = (codecs / name).read_text().splitlines()
    return {(name, n, "blocking_readback" if "item()" in t else "blocking_copy", "none")
            for n, t in enumerate(lines, start=1) for text in texts if text in t}


def test_containers_and_factories(sites_of, codecs, expected):
    assert sites_of(codecs, ENTRY, "cuda") == expected


def test_a_list_of_host_tensors_stays_on_the_host(sites_of, codecs):
    assert not _lines(codecs, "codec_model.py", "offsets.max()") & sites_of(codecs, ENTRY, "cuda")


def test_broken_variant_no_appended_items(sites_of, codecs, expected, monkeypatch):
    monkeypatch.setattr(values, "appended", lambda func: {})
    readbacks = _lines(codecs, "codec_model.py", "lengths.max().item()", "lengths[i].item()")
    assert len(readbacks) == 2
    assert sites_of(codecs, ENTRY, "cuda") == expected - readbacks


def test_broken_variant_no_alternative_constructors(sites_of, codecs, expected, monkeypatch):
    monkeypatch.setattr(callgraph._Analysis, "_alternative_constructor",
                        lambda self, cls, method, owner, depth: [])
    lost = _lines(codecs, "codec_tokenizer.py", "torch.tensor(")
    assert len(lost) == 2
    assert sites_of(codecs, ENTRY, "cuda") == expected - lost


def test_broken_variant_no_declared_classes(sites_of, codecs, expected, monkeypatch):
    monkeypatch.setattr(callgraph._Analysis, "_declared",
                        lambda self, module, annotated, owner, depth=0: [])
    lost = _lines(codecs, "codec_tokenizer.py", "torch.tensor(0.0")
    assert sites_of(codecs, ENTRY, "cuda") == expected - lost

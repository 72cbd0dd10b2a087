"""Objects that attributes hold are followed into the code they wrap (vLLM-Omni's MiMo-Audio
code2wav: a CUDA-graph wrapper built around the audio tokenizer falls back to the tokenizer's
eager decode; the batched path calls the tokenizer's decoder submodule). A constructor
parameter stored unannotated (``self.codec = codec``) takes the classes its constructions pass
(``GraphWrapper(self.codec)``); an annotated one (``codec: Codec``) its annotation; and
``obj.decoder(hidden)`` of a submodule attribute runs that module's ``forward``. Before, the
three readbacks were unreached. Fixture: tests/data/scan/wrappedmodules. Broken variants:
without the stored-parameter types the wrapper's and the streamer's fallbacks are lost; without
submodule calls, the decoder's upload."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph

ENTRY: list[str] = []


@pytest.fixture
def wrapped(scan_data: Path) -> Path:
    return scan_data / "wrappedmodules"


@pytest.fixture
def expected(wrapped: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(wrapped)
    assert len(found) == 3
    return found


def _in(expected: set[tuple[str, int, str, str]], kind: str) -> set[tuple[str, int, str, str]]:
    return {s for s in expected if s[2] == kind}


def test_wrapped_objects_reach_their_code(sites_of, wrapped, expected):
    assert sites_of(wrapped, ENTRY, "cuda") == expected


def test_broken_variant_no_stored_parameter_types(sites_of, wrapped, expected, monkeypatch):
    monkeypatch.setattr(callgraph._Analysis, "_type_stored_parameters",
                        lambda self, parameters, constructions: None)
    assert sites_of(wrapped, ENTRY, "cuda") == _in(expected, "blocking_copy")


def test_broken_variant_no_submodule_calls(sites_of, wrapped, expected, monkeypatch):
    monkeypatch.setattr(callgraph._Analysis, "_submodule_calls", lambda self, cls, attr: [])
    assert sites_of(wrapped, ENTRY, "cuda") == _in(expected, "blocking_readback")

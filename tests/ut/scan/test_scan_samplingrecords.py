"""The sampler's per-step tensors come from records its metadata module builds through
alternate constructors (split 10's Gaudi sampler, HabanaAI/vllm-fork 0cf5261919: a ``.item()``
of ``SamplingTensors.top_ps``): ``cls(...)`` in a record's classmethod is a construction of the
record, so a field stored there from a pinned host tensor sent ``.to(device=...)`` is a device
tensor and one stored from a host tensor is not; and V0's ``*.sampling_metadata`` module the
sampler imports is read without being named. Fixture: tests/data/scan/samplingrecords. Broken
variants: without either, the readback is left ``unknown_residence`` and passes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.config import Patterns, load_config

FILES = ("worker/toy_model_runner.py", "model_executor/layers/sampler.py")
SAMPLER = "sampler.py"


@pytest.fixture
def tree(scan_data: Path) -> Path:
    return scan_data / "samplingrecords" / "toyv0s"


@pytest.fixture
def reported(tree: Path):
    def sites(**options) -> set[tuple[str, int, str, str]]:
        return {(Path(f.file).name, f.line, f.kind, f.guard)
                for f in scan([str(tree / f) for f in FILES], device="cuda", **options).findings}
    return sites


@pytest.fixture
def expected(tree: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(tree / FILES[1])
    assert len(found) == 1
    return found


def _unknown(expected: set[tuple[str, int, str, str]]) -> set[tuple[str, int, str, str]]:
    return {(*site[:3], "unknown_residence") for site in expected}


def test_field_stored_by_an_alternate_constructor_fails(reported, expected):
    assert reported() == expected


def test_broken_variant_alternate_constructors_not_read(reported, expected, monkeypatch):
    monkeypatch.setattr(callgraph._StoredFields, "_alternate_constructions",
                        lambda self, record, module: [])
    assert reported() == _unknown(expected)


def test_broken_variant_sampling_metadata_not_followed(reported, expected):
    config = load_config()
    globs = tuple(g for g in config.follow_imports.globs if g != "*.sampling_metadata")
    assert globs != config.follow_imports.globs
    assert reported(config=replace(config, follow_imports=Patterns(globs))) == _unknown(expected)

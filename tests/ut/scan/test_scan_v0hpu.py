"""A V0 engine on a vendor device (the Gaudi fork's default): the runner samples through the
model's own ``sample``, which runs the layer sampler; a V0 attention backend has no builder to
say whether it is the default, so naming its file on the command line says it is the one in
use (the folder alone leaves it opt-in); a count of a device mask (``(groups == 0).sum()``)
derives from the record field it compares. Per-request sampling options (``do_top_p_top_k``)
are no guard: a model's generation config sets them by default on recent vLLM. Fixture:
tests/data/scan/v0hpu. Broken variants: without the model's sample reaching the sampler, or
without deriving through a comparison, their sites are lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, values
from vllm_syncgate.scan.callgraph import scan

FILES = ("worker/hpu_model_runner.py", "model_executor/layers/sampler.py",
         "attention/backends/hpu_attn.py")


@pytest.fixture
def tree(scan_data: Path) -> Path:
    return scan_data / "v0hpu" / "toyv0"


@pytest.fixture
def reported(tree: Path):
    def sites(files: tuple[str, ...] = FILES) -> set[tuple[str, int, str, str]]:
        return {(Path(f.file).name, f.line, f.kind, f.guard)
                for f in scan([str(tree / f) for f in files], device="cuda").findings}
    return sites


@pytest.fixture
def expected(tree: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = set().union(*(expected_sites(tree / f) for f in FILES[1:]))
    assert len(found) == 3
    return found


def _in(sites: set[tuple[str, int, str, str]], file: str) -> set[tuple[str, int, str, str]]:
    return {s for s in sites if s[0] == file}


def test_v0_sampler_and_named_backend_sites(reported, expected):
    assert reported() == expected


def test_a_backend_folder_leaves_its_impl_opt_in(reported, expected):
    (site,) = _in(expected, "hpu_attn.py")
    files = (*FILES[:2], "attention/backends")
    assert (*site[:3], "opt_in") in reported(files)


def test_broken_variant_model_sample_not_followed(reported, expected, monkeypatch):
    monkeypatch.setattr(callgraph._Analysis, "_model_calls", lambda self, ctx, attr, method: [])
    assert not _in(reported(), "sampler.py")


def test_broken_variant_no_derivation_through_a_comparison(reported, expected, monkeypatch):
    monkeypatch.setattr(values.ValueModel, "_derived_operands", lambda self, operands, depth: None)
    assert not _in(expected, "hpu_attn.py") & reported()

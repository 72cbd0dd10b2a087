"""A model family's own attention backend is on the default path (issue 20 item 2), on a runner
of our own (tests/data/scan/families): the latent-attention (MLA) builder a ``use_mla`` model
gets, whose build is its base's in another package; a gated-delta-net builder; a builder a
layer picks itself through ``get_attn_backend()`` (found by structure, no name list knows it).
Their syncs fail the gate; a backend only an env var picks stays opt-in. Each part is broken
on purpose and shown to lose the lines its family tag names.

Markers: ``# expect: KIND GUARD FAMILY``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, sources
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.config import Patterns, load_config

ENTRY = ["FamModelRunner.execute_model"]


@pytest.fixture
def families(scan_data: Path) -> Path:
    return scan_data / "families" / "fampkg"


def _reported(root: Path, **kwargs) -> set[tuple[str, int, str, str]]:
    # the runner, the layers (which pick their own backend) and the env-var-only backend are
    # named; the family builders come through the runner's import of the backends package
    paths = [str(root / "v1" / "worker"), str(root / "model_executor" / "mamba"),
             str(root / "v1" / "attention" / "backends" / "infer_alt.py")]
    result = scan(paths, entries=ENTRY, **kwargs)
    return {(Path(f.file).name, f.line, f.kind, f.guard) for f in result.findings}


def _missing(root: Path, marked, **kwargs) -> set[str]:
    expected = marked(root)
    return {expected[site] for site in set(expected) - _reported(root, **kwargs)}


def test_families_fixture_reports_exactly_the_marked_sites(families, marked_families):
    expected = marked_families(families)
    assert len(expected) == 5
    assert set(expected.values()) == {"mla", "gdn", "layer", "alt"}
    assert _reported(families) == set(expected)


def test_the_env_var_backend_is_not_read_unless_named(families):
    result = scan([str(families / "v1" / "worker")], entries=ENTRY)
    assert not [f for f in result.findings if f.file.endswith("infer_alt.py")]
    assert {f.qualname for f in result.failing} == {
        "LatentCommonMetadataBuilder.build", "GDNAttentionMetadataBuilder.build"}


def _names(*names: str):
    return lambda m: m.setattr(callgraph, "load_config", lambda: dataclasses.replace(
        load_config(), default_implementations=Patterns(names)))


# Each part broken on purpose: the families whose marked lines it must lose.
BROKEN = {
    # only a standard model's backend taken for the default (the scanner before this change)
    "model-family builders by name": (
        _names("FlashAttentionMetadataBuilder", "AscendAttentionMetadataBuilder"),
        {"mla", "gdn"}),
    # a layer's get_attn_backend() not read: its builder is taken for an opt-in alternative
    "builders a layer picks": (lambda m: m.setattr(callgraph, "_layer_chosen", lambda _i: []),
                               {"layer"}),
    # the backend modules a layer imports treated like any other backend's (not followed)
    "a layer's backend imports followed": (
        lambda m: m.setattr(sources, "_picks_backend", lambda _m: False), {"layer"}),
    # the default builder's base class not followed into its package: its build is unseen
    "base classes followed": (lambda m: m.setattr(sources, "_base_modules", lambda *a: []),
                              {"mla"}),
}


@pytest.mark.parametrize("family", sorted(BROKEN))
def test_a_broken_part_fails_the_families_fixture(families, marked_families, monkeypatch,
                                                  family):
    breaks, lost = BROKEN[family]
    breaks(monkeypatch)
    missing = _missing(families, marked_families)
    assert missing, family
    assert lost <= missing, (family, missing)


def test_every_builder_taken_for_the_default_fails_the_env_var_backend(families,
                                                                       marked_families):
    """Broken variant the other way: with every builder a default, the alternative backend's
    sync loses its opt-in guard and fails."""
    config = dataclasses.replace(load_config(), default_implementations=Patterns(("*",)))
    assert _missing(families, marked_families, config=config) == {"alt"}
    assert ("infer_alt.py", 15, "blocking_readback", "none") in _reported(families, config=config)


def test_a_spec_only_mask_guards_speculation_and_its_broken_variant_fails(families):
    """``spec_sequence_masks`` is None unless the batch has spec decodes (vLLM's GDN builder):
    without that name the spec-only readback fails the gate."""
    site = ("gated_delta.py", 20, "blocking_readback")
    assert (*site, "speculation") in _reported(families)
    config = load_config()
    config = dataclasses.replace(config, speculation=Patterns(tuple(
        g for g in config.speculation.globs if "spec_sequence" not in g)))
    assert (*site, "none") in _reported(families, config=config)

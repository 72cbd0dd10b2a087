"""The attention metadata builders every step runs (issue 20 item 2), on a runner of our own
(tests/data/scan/builders): the builder's class is picked at run time, so ``x.build(...)`` on
what a builder accessor hands out lands in every builder class; the default backend's build
fails the gate, another backend's is opt-in, a member built on first use is warm-up. Each part
is broken on purpose and shown to lose the lines its family tag names.

Markers: ``# expect: KIND GUARD FAMILY``.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, rules, sources, values
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.config import Patterns, load_config
from vllm_syncgate.scan.guards import GuardEvaluator
from vllm_syncgate.scan.values import keyword

ENTRY = ["BldModelRunner.execute_model"]


@pytest.fixture
def builders(scan_data: Path) -> Path:
    return scan_data / "builders" / "bldpkg" / "v1"


def _reported(root: Path, **kwargs) -> set[tuple[str, int, str, str]]:
    # the runner's folder and the other backend are named: the default builder comes through
    # the runner's import of the backends package (the other backend alone is not followed)
    paths = [str(root / "worker"), str(root / "attention" / "backends" / "latent.py")]
    result = scan(paths, entries=ENTRY, **kwargs)
    return {(Path(f.file).name, f.line, f.kind, f.guard) for f in result.findings}


def test_builders_fixture_reports_exactly_the_marked_sites(builders, marked_families):
    expected = marked_families(builders)
    assert len(expected) == 6
    assert set(expected.values()) == {"dispatch", "lazy", "default"}
    assert _reported(builders) == set(expected)


def test_the_default_builder_is_reached_through_the_group_and_fails(builders):
    result = scan([str(builders / "worker")], entries=ENTRY)
    # another backend the runner imports is opt-in: not read unless named
    assert not [f for f in result.findings if f.file.endswith("latent.py")]
    failing = {(f.qualname, f.path) for f in result.failing}
    assert failing == {("FlashAttentionMetadataBuilder.build", (
        "BldModelRunner.execute_model", "BldModelRunner._build_attention_metadata",
        "KVGroup.build_metadata", "FlashAttentionMetadataBuilder.build"))}
    # the host half of the common record is read on the host: no finding for int(lens.max())
    assert all("longest_host" not in f.code for f in result.findings)


def _nothing(*_args, **_kwargs):
    return []


# Each part broken on purpose: the families whose marked lines it must lose.
BROKEN = {
    # builder.build() resolved to nothing: the builders are never entered
    "run-time dispatch": (lambda m: m.setattr(callgraph._Analysis, "_dispatch", _nothing),
                          {"dispatch", "lazy", "default"}),
    # what get_metadata_builder() hands out taken for an unknown object
    "builder accessors": (
        lambda m: m.setattr(rules.FunctionWalker, "_dispatched", lambda *a: False),
        {"dispatch", "lazy", "default"}),
    # self.attn_groups: list[list[KVGroup]] = [] gives its items no class
    "annotated attributes": (lambda m: m.setattr(rules, "element_class", lambda *a: ""),
                             {"dispatch", "lazy"}),
    # the backends package not searched for the default builder (the runner imports only
    # its helpers)
    "backend packages followed": (lambda m: m.setattr(sources, "_defines", lambda *a: False),
                                  {"dispatch", "lazy"}),
    # if self.causal is None: self.causal = build() taken for a per-step build
    "members built on first use": (
        lambda m: m.setattr(GuardEvaluator, "_fills", lambda *a: False), {"lazy"}),
}


@pytest.mark.parametrize("family", sorted(BROKEN))
def test_a_broken_part_fails_the_builders_fixture(builders, lost_families, monkeypatch, family):
    breaks, lost = BROKEN[family]
    breaks(monkeypatch)
    missing = lost_families(builders, _reported(builders))
    assert lost <= missing, (family, missing)


def test_every_builder_taken_for_the_default_fails_the_other_backends(builders, marked_families):
    """Broken variant of the default-backend guard: with every builder a default, the other
    backend's syncs lose their opt-in guard and fail."""
    config = dataclasses.replace(load_config(), default_implementations=Patterns(("*",)))
    expected = marked_families(builders)
    reported = _reported(builders, config=config)
    missing = {expected[site] for site in set(expected) - reported}
    assert missing == {"default"}
    assert {("latent.py", 14, "blocking_readback", "none"),
            ("latent.py", 18, "blocking_readback", "none")} <= reported


def _old_host_allocation(_model, call):
    device = keyword(call, "device")
    return device is None or (isinstance(device, ast.Constant) and device.value == "cpu")


HOST_PADDING = {
    # device=lens.device taken for the accelerator: the padded host lens look like device data
    "device of a host value": lambda m: m.setattr(values.ValueModel, "_host_allocation",
                                                  _old_host_allocation),
    # the rebinding's own multi-line value sees the rebinding: lens.device reads itself
    "bindings end where their value ends": lambda m: m.setattr(
        values, "binding_end", lambda _value, line: line),
}


@pytest.mark.parametrize("family", sorted(HOST_PADDING))
def test_host_padding_stays_on_the_host_and_its_broken_variants_fail(builders, monkeypatch,
                                                                      family):
    widths = ("flash.py", _line_of(builders, "widths = lens.tolist()"), "blocking_readback",
              "none")
    assert widths not in _reported(builders)
    HOST_PADDING[family](monkeypatch)
    assert widths in _reported(builders)


def _line_of(root: Path, code: str) -> int:
    text = (root / "attention" / "backends" / "flash.py").read_text().splitlines()
    return next(n for n, line in enumerate(text, start=1) if code in line)


def test_installed_vllm_reaches_its_default_builder_and_others_when_named(vllm_worker_dir):
    """``vllm/v1/worker`` alone brings the default backends' modules along (the runner imports
    only the backends package's helpers; a model family's own backend, GDN, MLA, is a default
    too: tests/ut/scan/test_scan_families.py); a backend only an env var picks is opt-in where
    the command line names it, reached through AttentionGroup.build_metadata."""
    config = load_config()
    follow = sources.Follow(config.follow_imports.match, config.follow_packages.match,
                            config.default_implementations.match, config.dispatch_classes.match)
    index = sources.build_index([str(vllm_worker_dir)], follow=follow)
    names = {c.name for c in index.classes}
    assert {"FlashAttentionMetadataBuilder", "GDNAttentionMetadataBuilder",
            "FlashAttnMLAMetadataBuilder", "MLACommonMetadataBuilder"} <= names
    assert "FlashInferMetadataBuilder" not in names  # VLLM_ATTENTION_BACKEND only: opt-in
    flashinfer = vllm_worker_dir.parent / "attention" / "backends" / "flashinfer.py"
    result = scan([str(vllm_worker_dir), str(flashinfer)])
    reached = [f for f in result.findings if f.qualname == "FlashInferMetadataBuilder.build"]
    assert reached
    assert {f.guard for f in reached} == {"opt_in"}
    assert any("AttentionGroup.build_metadata" in f.path for f in reached)

"""The model the loader builds runs per-step code the runner only reaches as ``self.model.X``:
no scanned class is stored in ``self.model``, so the call lands in that method of every scanned
model class (vLLM-Omni's talkers: ``compute_logits`` round-trips the logits through the host;
a postprocess the model installs with a mixin's setter copies hidden states to the host).
Fixture: tests/data/scan/modelhooks. Broken variants: without the model dispatch every site is
lost; without the installed hooks, or without reading the mixin the setter lives in, only the
installed postprocess is lost; without the factory-built model slots, only the stage model's
sites are lost (its readback, and the host copy of what its submodule computed); without the
model methods fetched by name (``getattr(self.model, "talker_mtp", None)``), only that one;
without layers computing where their input lives, or without the module's own weights' device,
only the embedding's host copy; ignoring the architectures a factory call names, another
family's stage model with a method of the same name is reached too."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, sources, values
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.config import Patterns, load_config


@pytest.fixture
def tree(scan_data: Path) -> Path:
    return scan_data / "modelhooks" / "toyomni"


@pytest.fixture
def reported(tree: Path):
    def sites() -> set[tuple[str, int, str, str]]:
        paths = [str(tree / "worker"), str(tree / "model_executor" / "models")]
        return {(Path(f.file).name, f.line, f.kind, f.guard)
                for f in scan(paths, device="cuda").findings}
    return sites


@pytest.fixture
def expected(tree: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(tree / "model_executor" / "models")
    assert len(found) == 7
    return found


@pytest.fixture
def talker_sites(tree: Path, expected):
    """``talker_sites(text)``: the expected sites on the talker's line holding ``text``."""
    lines = (tree / "model_executor" / "models" / "talker.py").read_text().splitlines()

    def on(text: str) -> set[tuple[str, int, str, str]]:
        (line,) = [n for n, code in enumerate(lines, start=1) if text in code]
        return {s for s in expected if s[:2] == ("talker.py", line)}
    return on


@pytest.fixture
def postprocess(talker_sites) -> tuple[str, int, str, str]:
    (site,) = talker_sites('"last"')
    return site


@pytest.fixture
def stage_model(talker_sites, expected) -> set[tuple[str, int, str, str]]:
    """The stage model's own readback, and the copy of what a call of its submodule returns."""
    return talker_sites('"pad"') | {s for s in expected if s[0] == "code_predictor.py"}


@pytest.fixture
def fetched(talker_sites) -> set[tuple[str, int, str, str]]:
    """The readback in the model method the runner fetches by name."""
    return talker_sites("argmax().item()")


@pytest.fixture
def embedded(talker_sites) -> set[tuple[str, int, str, str]]:
    """The host copy of a layer's output on ids moved to the module's own device."""
    return talker_sites('"ids_embed"')


def test_model_methods_the_runner_calls_are_followed(reported, expected):
    assert reported() == expected


def test_broken_variant_no_model_dispatch(reported, expected, fetched, monkeypatch):
    monkeypatch.setattr(callgraph._Analysis, "_model_calls", lambda self, ctx, attr, method: [])
    assert reported() == fetched  # reached through the fetched method alone


def test_broken_variant_no_installed_hooks(reported, expected, postprocess, stage_model,
                                           embedded, monkeypatch):
    monkeypatch.setattr(callgraph, "_installed_methods", lambda index, classes: {})
    # the hook calls the stage model and embeds the ids
    assert reported() == expected - {postprocess} - stage_model - embedded


def test_broken_variant_no_model_slots(reported, expected, stage_model, monkeypatch):
    without = dataclasses.replace(load_config(), model_factories=Patterns(()))
    monkeypatch.setattr(callgraph, "load_config", lambda: without)
    found = reported()
    assert not found & stage_model  # the submodule's copy is left unknown_residence
    assert expected - stage_model <= found


def test_broken_variant_mixin_not_read(reported, expected, postprocess, stage_model, embedded,
                                       monkeypatch):
    monkeypatch.setattr(sources, "_base_modules", lambda module, wanted: [])
    assert reported() == expected - {postprocess} - stage_model - embedded


def test_broken_variant_no_fetched_model_methods(reported, expected, fetched, monkeypatch):
    monkeypatch.setattr(callgraph, "_model_method", lambda config, value: "")
    assert reported() == expected - fetched


def _gating(found: set[tuple[str, int, str, str]]) -> set[tuple[str, int, str, str]]:
    return {s for s in found if s[3] == "none"}


def test_broken_variant_no_layer_residence(reported, expected, embedded, monkeypatch):
    monkeypatch.setattr(values.ValueModel, "_in_module", lambda self: False)
    assert _gating(reported()) == expected - embedded  # left unknown_residence


def test_broken_variant_no_module_weights_device(reported, expected, embedded, monkeypatch):
    monkeypatch.setattr(values, "_module_weights", lambda node: False)
    assert _gating(reported()) == expected - embedded


def test_broken_variant_factory_architectures_ignored(reported, expected, tree, line_of,
                                                      monkeypatch):
    monkeypatch.setattr(callgraph, "_architectures", lambda value: {""})
    predictor = tree / "model_executor" / "models" / "code_predictor.py"
    other = (predictor.name, line_of(predictor, "another family's stage only"),
             "blocking_readback", "none")
    assert reported() == expected | {other}  # another family's stage model is reached

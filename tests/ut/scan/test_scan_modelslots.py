"""Where ``self.x.method()`` lands when ``x`` holds a model: a slot a factory builds from a
composite config's text part (``hf_config=config.text_config``) holds a text model, never a
class that declares the multimodal interface (vLLM's Voxtral hands its language model no
multimodal mask, yet every multimodal model's mask readback was reached through it; audit 11);
``self.model = self.model_cls()`` builds the classes the class attribute names, in the class
and its subclasses (vLLM's AXK1); and inside a model class ``self.model`` is that backbone, not
the loader's model, so it does not fan out to every model class. Fixture:
tests/data/scan/modelslots. Broken variants: without text slots, the multimodal model's mask
readback comes back (a device mask from the speech model); without class attributes, the loud
backbone's readback is lost; with ``self.model`` fanning out inside model classes, another
model's ``embed`` is reached."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph

ENTRY: list[str] = []


@pytest.fixture
def tree(scan_data: Path) -> Path:
    return scan_data / "modelslots" / "toyvlm"


@pytest.fixture
def speech(tree: Path) -> Path:
    return tree / "model_executor" / "models" / "speech.py"


@pytest.fixture
def expected(tree: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(tree / "model_executor" / "models")
    assert len(found) == 1
    return found


def test_model_slots_hold_what_builds_them(sites_of, tree, expected):
    assert sites_of(tree, ENTRY, "cuda") == expected


def test_broken_variant_no_text_slots(sites_of, tree, speech, expected, line_of, monkeypatch):
    monkeypatch.setattr(callgraph, "_text_config", lambda config, value: False)
    masked = (speech.name, line_of(speech, "only the runner's host mask"), "blocking_readback",
              "none")
    assert sites_of(tree, ENTRY, "cuda") == expected | {masked}


def test_broken_variant_no_class_attributes(sites_of, tree, monkeypatch):
    monkeypatch.setattr(callgraph._Analysis, "_class_attribute_classes",
                        lambda self, owner, attr: [])
    assert sites_of(tree, ENTRY, "cuda") == set()


def test_broken_variant_backbone_fans_out(sites_of, tree, speech, expected, line_of,
                                          monkeypatch):
    monkeypatch.setattr(callgraph._Analysis, "_model_class", lambda self, cls: False)
    decoy = (speech.name, line_of(speech, "no fan-out here"), "blocking_readback", "none")
    assert sites_of(tree, ENTRY, "cuda") == expected | {decoy}

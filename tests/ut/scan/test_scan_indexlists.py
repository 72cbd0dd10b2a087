"""Indexing a device tensor with a Python list uploads the list (vLLM-Omni's Qwen3-Omni talker
suppressing ~1000 codec tokens with ``logits[:, self.suppressed_tokens] = -1e9`` every step,
split 10): torch builds a host index tensor in pageable memory and copies it before the write
or the gather. Integers, slices, a device index tensor and a host tensor upload nothing.
Fixture: tests/data/scan/indexlists. Broken variants: without the rule every site is lost;
without the class's list attributes, the two ``self.x`` ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import rules, values
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.sources import is_self_attribute

ENTRY: list[str] = []


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "indexlists" / "suppress_runner.py"


def _site(runner: Path, text: str) -> tuple[str, int, str, str]:
    """The marked site on the line holding ``text``."""
    lines = runner.read_text().splitlines()
    (line,) = [n for n, t in enumerate(lines, start=1) if text in t]
    return (runner.name, line, "blocking_copy", "none")


def test_list_indices_upload(sites_of, runner, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 3
    assert sites_of(runner, ENTRY, "cuda") == expected


def test_the_explanation_says_why_it_blocks(runner):
    finding = next(f for f in scan([str(runner)], entries=ENTRY, device="cuda").findings
                   if "index upload" in f.api)
    assert "pageable" in finding.why
    assert "gpu-physics.md" in finding.why


def test_broken_variant_no_list_index_rule(sites_of, runner, monkeypatch):
    monkeypatch.setattr(rules.FunctionWalker, "_list_index", lambda self, node, stack: None)
    assert sites_of(runner, ENTRY, "cuda") == set()


def test_broken_variant_no_list_attributes(sites_of, runner, expected_sites, monkeypatch):
    original = values.ValueModel.python_indices

    def no_attributes(self, node, depth=0):
        return False if is_self_attribute(node) else original(self, node, depth)

    monkeypatch.setattr(values.ValueModel, "python_indices", no_attributes)
    attributes = {_site(runner, "[:, self.suppressed] ="), _site(runner, "self.keep]")}
    assert sites_of(runner, ENTRY, "cuda") == expected_sites(runner) - attributes

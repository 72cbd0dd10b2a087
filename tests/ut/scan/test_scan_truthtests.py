"""Branching on one element of a device tensor (``if mask.any():``, ``while lens.sum() > 0:``)
calls ``__bool__``, a readback (vLLM-Omni's Fish Speech talker did, split 11); the same tests on
host tensors are free. A boolean mask a helper makes from its parameter gathers a readback
where a caller passes a device tensor, and so is a mask reduced along a dimension
(``codes.ne(pad).any(dim=-1)``, split 13). ``any()`` of identity tests over device tensors reads
nothing back (vLLM-Gaudi, audit 11). Fixture: tests/data/scan/truthtests. Broken variants:
without the branch-test rule its two sites are lost; without parameter masks, the helper's;
without masks of masks, the reduced one's; with comprehensions of identity tests taken as
tensors, the ``any()`` comes back."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import rules, values

ENTRY: list[str] = []


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "truthtests" / "branch_runner.py"


@pytest.fixture
def expected(runner: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(runner)
    assert len(found) == 5
    return found


def _line(runner: Path, text: str) -> int:
    (line,) = [n for n, t in enumerate(runner.read_text().splitlines(), start=1) if text in t]
    return line


def test_branch_tests_and_parameter_masks(sites_of, runner, expected):
    assert sites_of(runner, ENTRY, "cuda") == expected


def test_broken_variant_no_branch_tests(sites_of, runner, expected, monkeypatch):
    monkeypatch.setattr(rules.FunctionWalker, "_truth_test", lambda self, test, stack: None)
    reads = {s for s in expected
             if s[1] in (_line(runner, "return values[keep]"), _line(runner, "codes[alive]"),
                         _line(runner, "max(lens, mask)"))}
    assert sites_of(runner, ENTRY, "cuda") == reads


def test_broken_variant_no_parameter_masks(sites_of, runner, expected, monkeypatch):
    def device_only(self, node, stack):
        if self.values.place(node.value) is rules.Place.DEVICE:
            self._site(node, rules.SyncKind.BLOCKING_READBACK, "Tensor.__getitem__(bool mask)",
                       stack)
    monkeypatch.setattr(rules.FunctionWalker, "_mask_read", device_only)
    gather = {s for s in expected if s[1] == _line(runner, "return values[keep]")}
    assert sites_of(runner, ENTRY, "cuda") == expected - gather


def test_broken_variant_no_masks_of_masks(sites_of, runner, expected, monkeypatch):
    monkeypatch.setattr(values, "_MASK_OF_MASK", frozenset())
    reduced = {s for s in expected if s[1] == _line(runner, "self.alive = codes[alive]")}
    assert sites_of(runner, ENTRY, "cuda") == expected - reduced


def test_broken_variant_identity_tests_as_tensors(sites_of, runner, expected, monkeypatch):
    monkeypatch.setattr(rules, "_identity_tests", lambda node: False)
    extra = (runner.name, _line(runner, "identity tests: Python bools"), "blocking_readback",
             "none")
    assert sites_of(runner, ENTRY, "cuda") == expected | {extra}

"""Calls on objects that only locals and parameters hold are followed (vLLM-Omni's MOSS-TTS codec
session, split 13): ``session = self._ensure_session()`` (the getter's return annotation),
``session: StreamSession`` (a helper's parameter), ``scratch = StreamSession(1)``, ``kept =
self.kept`` and ``open_session(2).describe(...)``. Before, only ``self.kept.method()`` was, so
the session's readbacks were unreached. Fixture: tests/data/scan/typedlocals. Broken variants:
without makers the four typed-local readbacks are lost; without one-link aliases the alias's."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import rules

ENTRY: list[str] = []


@pytest.fixture
def typedlocals(scan_data: Path) -> Path:
    return scan_data / "typedlocals"


@pytest.fixture
def expected(typedlocals: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(typedlocals)
    assert len(found) == 5
    return found


def _lines(typedlocals: Path, *texts: str) -> set[tuple[str, int, str, str]]:
    lines = (typedlocals / "stream_session.py").read_text().splitlines()
    return {("stream_session.py", n, "blocking_readback", "none")
            for n, t in enumerate(lines, start=1) for text in texts if text in t}


def test_locals_and_parameters_reach_their_class(sites_of, typedlocals, expected):
    assert sites_of(typedlocals, ENTRY, "cuda") == expected


def test_broken_variant_no_makers(sites_of, typedlocals, expected, monkeypatch):
    monkeypatch.setattr(rules.FunctionWalker, "_makers", lambda self, receiver: ())
    lost = _lines(typedlocals, "lengths.max()", "codes.sum()", "codes.argmax()", "codes.min()")
    assert len(lost) == 4
    assert sites_of(typedlocals, ENTRY, "cuda") == expected - lost


def test_broken_variant_no_one_link_alias(sites_of, typedlocals, expected, monkeypatch):
    monkeypatch.setattr(rules, "_links", lambda receiver: 2)
    lost = _lines(typedlocals, "codes.tolist()")
    assert sites_of(typedlocals, ENTRY, "cuda") == expected - lost

"""A route whose tests demand that a member be None and not None at once is never taken, when
only ``__init__`` assigns that member (vLLM-Omni's Qwen2.5-Omni ``_codec_to_audio`` calls
``_init_token2wav_model`` only while the vocoder is None, and that method returns first thing
when it is None; audits 7 and 8). A member another method assigns keeps its route. Fixture:
tests/data/scan/contradictions. Broken variants: with no contradiction found, the speaker upload
and the contradicting nested test's readback come back; with every member taken as fixed, the
reference readback (whose member ``_refresh`` assigns in between) is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import guards

ENTRY: list[str] = []


@pytest.fixture
def contradictions(scan_data: Path) -> Path:
    return scan_data / "contradictions"


@pytest.fixture
def expected(contradictions: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(contradictions)
    assert len(found) == 1
    return found


@pytest.fixture
def dead(contradictions: Path, line_of) -> set[tuple[str, int, str, str]]:
    """The two sites only a contradictory route reaches, as a scan without the rule finds them."""
    runner = contradictions / "speaker_runner.py"
    return {(runner.name, line_of(runner, "never from _decode"), "blocking_copy", "none"),
            (runner.name, line_of(runner, "contradicts the one around"), "blocking_readback",
             "none")}


def test_contradictory_routes_are_not_taken(sites_of, contradictions, expected):
    assert sites_of(contradictions, ENTRY, "cuda") == expected


def test_broken_variant_no_contradictions(sites_of, contradictions, expected, dead, monkeypatch):
    monkeypatch.setattr(guards, "_none_tests", lambda test, positive: {})
    assert sites_of(contradictions, ENTRY, "cuda") == expected | dead


def test_broken_variant_every_member_fixed(sites_of, contradictions, monkeypatch):
    monkeypatch.setattr(guards, "_set_after_init", lambda cls: frozenset())
    assert sites_of(contradictions, ENTRY, "cuda") == set()

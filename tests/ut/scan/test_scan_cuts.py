"""An answer that met a recursion cut on the way is not kept. A helper's return is judged for its
callers (where it lives, how it is pinned) and memoised; judged first from inside a judgement
still in progress (a record field whose constructions are being read, a return being computed),
part of what it needs is answered "unknown" by the cut, so that first answer may be unknown
where a later ask, outside the recursion, knows. Kept, it hid real uploads: vllm-ascend 0.23.0's
GDN builder uploads of ``prepare_chunk_offsets(cu_seqlens_cpu)`` (sweep-labelled real) went
quiet once an unrelated record's alternate constructor was read first. The recursion is
simulated here by making the first judgement of the fixture's helper meet a cut; the caching
is the scanner's own. The same holds for a record field whose constructions store another
record's field that stores it back (tests/data/scan/cuts/fieldpkg): judged first from inside the
other field's judgement, it was kept unknown, so a readback of it passed or failed depending on
which field the walk met first. Fixture: tests/data/scan/cuts. Broken variants: keeping an
unknown met on a cut, of the pinning, of the place or of a stored field, loses the readback."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph
from vllm_syncgate.scan.values import Pin, Place

HELPER = "prepare_offsets"


@pytest.fixture
def tree(scan_data: Path) -> Path:
    return scan_data / "cuts" / "cutpkg"


@pytest.fixture
def expected(tree: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(tree / "builder.py")
    assert len(found) == 1
    return found


def _first_ask_cut(monkeypatch: pytest.MonkeyPatch, method: str, unknown: object) -> None:
    """The helper's first judgement by ``method`` meets a cut recursion and answers unknown."""
    real = getattr(callgraph._ReturnPlaces, method)
    seen: set[str] = set()

    def judged(self, target, *args):  # type: ignore[no-untyped-def]
        if target.name == HELPER and method not in seen:
            seen.add(method)
            self.facts.cuts += 1
            return unknown
        return real(self, target, *args)

    monkeypatch.setattr(callgraph._ReturnPlaces, method, judged)


def test_the_upload_fails_without_a_cut(sites_of, tree, expected):
    assert sites_of(tree, [], "cuda") == expected


@pytest.mark.parametrize(("method", "unknown"), [("_pin_of", Pin.UNKNOWN),
                                                 ("_compute", (Place.UNKNOWN, set()))])
def test_an_unknown_met_on_a_cut_is_asked_again(sites_of, tree, expected, monkeypatch,
                                                method, unknown):
    _first_ask_cut(monkeypatch, method, unknown)
    assert sites_of(tree, [], "cuda") == expected


@pytest.mark.parametrize(("method", "unknown"), [("_pin_of", Pin.UNKNOWN),
                                                 ("_compute", (Place.UNKNOWN, set()))])
def test_broken_variant_unknown_kept_after_a_cut(sites_of, tree, monkeypatch, method, unknown):
    _first_ask_cut(monkeypatch, method, unknown)
    monkeypatch.setattr(callgraph, "keeps", lambda unknown, cuts, facts: True)
    assert sites_of(tree, [], "cuda") == set()


@pytest.fixture
def fields(scan_data: Path) -> Path:
    return scan_data / "cuts" / "fieldpkg"


def test_a_field_judged_inside_another_fields_recursion_is_asked_again(sites_of, fields,
                                                                      expected_sites):
    expected = expected_sites(fields)
    assert len(expected) == 2
    assert sites_of(fields, [], "cuda") == expected


def test_broken_variant_keeping_a_field_met_on_a_cut(sites_of, fields, expected_sites,
                                                      monkeypatch):
    monkeypatch.setattr(callgraph, "keeps", lambda unknown, cuts, facts: True)
    lines = (fields / "runner.py").read_text().splitlines()
    (line,) = [n for n, text in enumerate(lines, start=1) if "staged.counts.tolist()" in text]
    lost = ("runner.py", line, "blocking_readback", "none")
    assert sites_of(fields, [], "cuda") == expected_sites(fields) - {lost} | {
        (*lost[:3], "unknown_residence")}

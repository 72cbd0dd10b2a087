"""Debugging aids behind environment variables are opt-in: the gate protects a default
deployment, where no debug or dump variable is set, so a read of one is its default (None when
it names none) through ``or None``, ``.strip().lower()``, ``int()`` and comparisons, and a
presence test (``"X" in os.environ``) is false. Half of the third precision audit's opt-in syncs
judged default were such dumps and traces (tests/data/scan/audit/flagged3.toml). A switch whose
default is on, or one a scanned module sets itself, keeps its sync failing. Fixture:
tests/data/scan/envdebug. Broken variants: reads of the environment decide nothing, and every
dump's readback fails; a variable the module sets is taken as unset, and its check passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, guards


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "envdebug" / "env_runner.py"


def test_debug_variables_guard_their_syncs_and_defaults_on_do_not(runner, sites_of,
                                                                   expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 7
    assert sites_of(runner, [], "cuda") == expected


def test_broken_variant_environment_reads_decide_nothing(runner, sites_of, expected_sites,
                                                         monkeypatch):
    monkeypatch.setattr(guards, "environment_default", lambda node, written: (False, None))
    monkeypatch.setattr(guards, "_environment_compare", lambda left, op, right, written: None)
    assert sites_of(runner, [], "cuda") == {
        (name, line, kind, "none") for name, line, kind, _ in expected_sites(runner)}


def test_broken_variant_variables_the_tree_sets_are_unset_too(runner, sites_of, expected_sites,
                                                              monkeypatch):
    monkeypatch.setattr(callgraph, "environment_writes", lambda trees: frozenset())
    lines = runner.read_text().splitlines()
    (line,) = [n for n, text in enumerate(lines, start=1) if "positions[-1].item()" in text]
    forced = (runner.name, line, "blocking_readback", "none")
    assert sites_of(runner, [], "cuda") == expected_sites(runner) - {forced} | {
        (*forced[:3], "opt_in")}

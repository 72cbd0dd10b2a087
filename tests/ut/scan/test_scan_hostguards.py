"""Guards the source decides: debug logging is off in the deployment the gate protects (a server
starts at INFO), so a readback under ``logger.isEnabledFor(logging.DEBUG)`` is opt-in; and
``x.cpu() if x.is_cuda else x`` is on the host either way (the host copy where ``x`` is on the
accelerator, ``x`` itself only where it is not), so reading its elements is no readback: the
``.cpu()`` is. Both were written after reading audit 5 (tests/data/scan/audit/flagged5.toml,
sites 16 and 39: in sample there). Fixture: tests/data/scan/hostguards. Broken variants: the
debug test decides nothing (the debug readback fails); the accelerator test decides nothing (the
host view's element reads fail)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import guards, values


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "hostguards" / "guarded_runner.py"


def test_debug_logging_and_host_views_decide_their_syncs(runner, sites_of, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 7
    assert sites_of(runner, [], "cuda") == expected


def test_broken_variant_debug_logging_decides_nothing(runner, sites_of, expected_sites,
                                                      monkeypatch, line_of):
    monkeypatch.setattr(guards, "_debug_logging", lambda call: False)
    debug = (runner.name, line_of(runner, "self.lens.tolist()"), "blocking_readback")
    assert sites_of(runner, [], "cuda") == expected_sites(runner) - {(*debug, "opt_in")} | {
        (*debug, "none")}


def test_broken_variant_the_accelerator_test_decides_nothing(runner, sites_of, expected_sites,
                                                             monkeypatch, line_of):
    monkeypatch.setattr(values, "_host_either_way", lambda node: False)
    first = (runner.name, line_of(runner, "int(header[0])"), "blocking_readback", "none")
    assert sites_of(runner, [], "cuda") == expected_sites(runner) | {first}

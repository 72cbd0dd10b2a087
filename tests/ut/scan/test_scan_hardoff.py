"""A switch hard-wired off (``self.chunked_prefill_enabled = False``, never set to anything
else) guards what runs only when it is on: the DeepSeek-V4 fork of vllm-ascend sets it so, and
its chunked-prefill upload was a false alarm of the precision audit (tests/data/scan/audit,
site 3). The base class that reads the config, and a switch some method also sets from a
config, decide nothing. Fixture:
tests/data/scan/hardoff. Broken variant: without hard-wired switches the dead upload fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import guards
from vllm_syncgate.scan.callgraph import scan

ENTRY: list[str] = []


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "hardoff" / "hardoff_runner.py"


def _dead_line(runner: Path) -> int:
    (line,) = [n for n, t in enumerate(runner.read_text().splitlines(), start=1)
               if "# dead:" in t]
    return line


def test_a_switch_hard_wired_off_guards_its_branch(runner, sites_of, expected_sites):
    assert sites_of(runner, ENTRY, "cuda") == expected_sites(runner) | {
        (runner.name, _dead_line(runner), "blocking_copy", "opt_in")}
    assert len(scan([str(runner)], entries=ENTRY, device="cuda").failing) == 2


def test_broken_variant_no_hard_wired_switches(runner, monkeypatch):
    monkeypatch.setattr(guards, "owned", lambda table, owner, attr: None)
    failing = {f.line for f in scan([str(runner)], entries=ENTRY, device="cuda").failing}
    assert _dead_line(runner) in failing

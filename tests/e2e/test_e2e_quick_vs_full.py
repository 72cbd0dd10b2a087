"""`syncgate check --quick` against the full check, both real: for the scenarios quick runs, the
verdicts, steps by kind, parity findings, sync verdicts and tokens are the full check's."""

import copy
import json
import os
import subprocess
import sys

import pytest

from vllm_syncgate.check.compare import report_differences

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _report(tmp_path, name, *args):
    report_dir = tmp_path / name
    done = subprocess.run(
        [sys.executable, "-m", "vllm_syncgate.cli", "check", "--levels", "serve", "--quiet",
         "--no-cache", "--report-dir", str(report_dir), *args],
        capture_output=True, text=True, timeout=900, env=dict(os.environ),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((report_dir / "report.json").read_text())


def test_quick_finds_what_the_full_check_finds(tmp_path, syncgate_device, no_leftovers):
    if syncgate_device != "cpu":
        pytest.skip("the quick set is compared on the embedded CPU default")
    full = _report(tmp_path, "full")
    quick = _report(tmp_path, "quick", "--quick")
    assert {s["key"] for s in quick["scenarios"]} < {s["key"] for s in full["scenarios"]}
    assert report_differences(full, quick) == []
    # the comparison reads these real reports: a step more in a one-at-a-time scenario is a
    # difference (in a concurrent one, steps by kind are arrival timing: compare.py)
    bent = copy.deepcopy(quick)
    [scenario] = [s for s in bent["scenarios"] if s["scenario"] == "sequential"]
    scenario["steps"] = {**scenario["steps"], "decode": scenario["steps"].get("decode", 0) + 1}
    [line] = report_differences(full, bent)
    assert line.startswith(f"{scenario['key']}: steps ")
    assert no_leftovers(tmp_path) == []

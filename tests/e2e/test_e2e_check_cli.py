"""`syncgate check` end to end as CI runs it: a sync-heavy mutant fails naming its site, a corrupted
token shows up as a divergence in the report, and an invalid server flag is a one-line exit 2."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.report import CheckResult, write_reports
from vllm_syncgate.check.run import GroupRun
from vllm_syncgate.serve.scenarios import SCENARIOS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _check(args, tmp_path, **env):
    # the serve level only: these tests are about the server, and the scan and unit levels
    # before it (tests/ut/check, tests/ut/commands) would add a minute to each
    return subprocess.run(
        [sys.executable, "-m", "vllm_syncgate.cli", "check", "--levels", "serve", "--no-cache",
         "--report-dir", str(tmp_path / "report"), *args],
        capture_output=True, text=True, timeout=900, env={**os.environ, **env},
    )


def test_sync_heavy_mutant_fails_the_gate_naming_to_list(tmp_path, no_leftovers,
                                                         syncgate_device):
    # the temp dir of check and of the vLLM tree it serves (short: unix socket paths are too)
    temp = Path(tempfile.mkdtemp(prefix="sgt-"))
    try:
        done = _check(["--device", syncgate_device, "--scenarios", "sequential",
                       "--mutant", "sync_heavy_to_list"], tmp_path, TMPDIR=str(temp))
        left = sorted(p.name for p in temp.iterdir())
    finally:
        shutil.rmtree(temp)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "(mutant sync_heavy_to_list)" in done.stdout.splitlines()[-1]  # never a silent knob
    fails = [line for line in done.stdout.splitlines() if line.startswith("FAIL ")]
    assert any("decode steps" in line and "_to_list" in line for line in fails), done.stdout
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["env"]["mutant"] == "sync_heavy_to_list"
    [scenario] = report["scenarios"]
    breaches = scenario["sync_verdict"]["breaches"]
    kinds = {b["kind"] for b in breaches if b["step_kind"] == "decode"}
    assert {"device_sync", "blocking_readback"} <= kinds
    sites = [site for b in breaches for site in b["sites"]]
    assert any("mutants.py" in site and site.endswith(":_to_list") for site in sites), sites
    assert scenario["parity"]["hf"] == []  # the mutant blocks, but its tokens are still right
    junit = (tmp_path / "report" / "junit.xml").read_text()
    assert "_to_list" in junit
    assert no_leftovers(tmp_path) == []
    # vLLM's IPC sockets and rendezvous files (a killed tree never removes them) went with the
    # server's private temp dir; torch's kernel cache is meant to stay
    assert [name for name in left if not name.startswith("torchinductor_")] == []


@pytest.mark.parametrize("device", ["cuda", "npu"])
def test_wrapping_to_list_override_fails_the_rehearsal_it_would_pass_by_mro(tmp_path, no_leftovers,
                                                                            device):
    """The device budgets allow _to_list's transfer wait in overrides (``overrides = true``); a
    subclass override that adds a device synchronize around it must still fail, naming its line."""
    done = _check(["--device", device, "--rehearse", "--scenarios", "sequential",
                   "--mutant", "wrapping_to_list"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    [scenario] = report["scenarios"]
    verdict = scenario["sync_verdict"]
    [breach] = [b for b in verdict["breaches"] if b["step_kind"] == "decode"]
    assert (breach["kind"], breach["worst"]) == ("device_sync", 1)
    assert all("mutants.py" in site and site.endswith(":_to_list") for site in breach["sites"])
    # the transfer wait it wraps is CPUModelRunner._to_list, allowed via GPUModelRunner's rule
    assert "vllm.v1.worker.cpu_model_runner:CPUModelRunner._to_list" in verdict["allowed"]
    assert verdict["rehearsal"]["what"] == f"rehearsal of {device} on cpu"
    assert no_leftovers(tmp_path) == []


def test_corrupted_token_is_reported_as_the_first_divergence(group_server, hf_reference, budgets,
                                                             profile, tmp_path):
    session = group_server(profile.groups[0].name)
    run = session.run(SCENARIOS["sequential"])
    victim = run.outcome.generations[3]
    original = victim.token_ids[5]
    victim.token_ids[5] = (original + 1) % 2000
    result = session.result
    single = GroupRun(result.profile_group, result.flags, result.log_path, result.audit_dir,
                      scenarios=[run], runner=result.runner, speculation=result.speculation)
    verdicts, groups = judge([single], hf_reference, budgets, mode=profile.parity,
                             tolerance=profile.tolerance,
                             default_runner=profile.runner)
    [verdict] = verdicts
    assert not verdict.passed
    [issue] = verdict.hf
    assert issue.label == victim.label
    assert (issue.divergence.index, issue.divergence.expected, issue.divergence.actual) == (
        5, original, (original + 1) % 2000)
    write_reports(CheckResult({}, {}, {}, verdicts, groups), tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    [shown] = report["scenarios"][0]["parity"]["hf"]
    assert shown["divergence"]["index"] == 5
    assert shown["divergence"]["text"]["expected"] == hf_reference.decode([original])
    assert "token 5: expected" in (tmp_path / "junit.xml").read_text()


def test_invalid_server_flag_is_a_one_line_exit_2(tmp_path, no_leftovers, profile):
    source = Path(profile.source).read_text().replace(
        'flags = ["--no-async-scheduling"]', 'flags = ["--bogus-flag"]', 1)
    broken = tmp_path / "broken.toml"
    broken.write_text(source)
    done = _check(["--profile", str(broken), "--scenarios", "sequential"], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("syncgate check: error: server 'baseline' exited with code")
    assert "--bogus-flag" in last
    assert no_leftovers(tmp_path) == []


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_check_leaves_no_process(tmp_path, no_leftovers, syncgate_device, how):
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm_syncgate.cli", "check", "--levels", "serve", "--device",
         syncgate_device, "--scenarios", "sequential", "--no-cache",
         "--report-dir", str(tmp_path / "report")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        for line in proc.stderr:  # progress lines: wait until the server is booting
            if "starting vllm serve" in line:
                break
        deadline = time.monotonic() + 60
        while not no_leftovers(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert no_leftovers(tmp_path), "the server never started"
        time.sleep(3)  # let it spawn its EngineCore
        proc.send_signal(how)
        assert proc.wait(60) == 130
        assert no_leftovers(tmp_path) == []
    finally:
        proc.kill()
        proc.wait()

"""Signals against ``syncgate repro`` while its real rerun tree (pytest + xdist workers) runs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid

import pytest

LOG = "FAILED test_sleep.py::test_sleep - boom\n== 1 failed in 1.00s ==\n"
CLEAN_LOG = "test_sleep.py::test_sleep PASSED\n== 1 passed in 1.00s ==\n"


@pytest.fixture
def rerun_tree(sandbox):
    """Start ``syncgate repro`` on a test that sleeps; return (process, tag) once the pytest
    session and both xdist workers are running."""
    proj = sandbox.work / "proj"
    proj.mkdir()
    (proj / "pytest.ini").write_text("[pytest]\n")
    (proj / "test_sleep.py").write_text("import time\n\ndef test_sleep():\n    time.sleep(300)\n")
    (sandbox.work / "ci.log").write_text(LOG)
    tag = uuid.uuid4().hex
    proc = subprocess.Popen(
        sandbox.argv(["repro", "ci.log", "--rootdir", "proj", "--runs", "4", "-n", "2",
                      "--no-early-stop"]),
        cwd=sandbox.work, env=sandbox.env(tag), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # syncgate, its reaper, the pytest session and two xdist workers running the test
        if _tree_size(sandbox, tag) >= 5:
            break
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    yield proc, tag
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    sandbox.wait_unmarked(tag, 0)


def _tree_size(sandbox, tag):
    return len(sandbox.marked(tag))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["sigterm", "sighup", "sigint"])
def test_signal_takes_the_tree_and_its_temp_dir_down(sandbox, rerun_tree, sig):
    proc, tag = rerun_tree
    assert proc.poll() is None, proc.communicate()
    assert _tree_size(sandbox, tag) >= 5
    assert [p for p in os.listdir(sandbox.tmp) if p.startswith("syncgate-repro-")]
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.decode().strip().splitlines() == ["syncgate repro: interrupted"]
    assert b"Traceback" not in out + err
    assert sandbox.wait_unmarked(tag, 10) == []
    assert os.listdir(sandbox.tmp) == []


def test_sigkill_takes_the_tree_down_and_the_next_start_removes_the_temp_dir(sandbox, handled,
                                                                          rerun_tree):
    proc, tag = rerun_tree
    assert proc.poll() is None, proc.communicate()
    assert _tree_size(sandbox, tag) >= 5
    proc.kill()
    proc.wait()
    assert sandbox.wait_unmarked(tag, 10) == []
    [stale] = os.listdir(sandbox.tmp)  # nothing runs in a SIGKILLed process, not even atexit
    assert stale.startswith(f"syncgate-repro-{proc.pid}-")
    (sandbox.work / "clean.log").write_text(CLEAN_LOG)
    outcome = sandbox.run(["repro", "clean.log", "--rootdir", "proj"])
    assert outcome.code == 0, outcome.stderr
    assert stale not in os.listdir(sandbox.tmp)

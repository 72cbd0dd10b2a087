"""ci/docker-down.sh stops exactly what ci/docker-up.sh started (by its pid files), escalates to
SIGKILL when SIGTERM is ignored, and is harmless when run twice or with nothing started."""

import contextlib
import os
import shlex
import signal
import subprocess
import time

import pytest


def _down(repo, state):
    return subprocess.run(["bash", str(repo / "ci/docker-down.sh")], capture_output=True,
                          text=True, timeout=60, check=False,
                          env={**os.environ, "SYNCGATE_DOCKER_STATE": str(state)})


def _gone(pid, within_s=5.0):
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def started(tmp_path):
    """Start a background process the way docker-up does (detached, reaped by init)."""
    pids = []

    def start(pidfile, script="sleep 300"):
        out = subprocess.run(["bash", "-c", f"setsid bash -c {shlex.quote(script)} "
                              ">/dev/null 2>&1 & echo $!"], capture_output=True, text=True,
                             check=True, timeout=10)
        pid = int(out.stdout)
        pids.append(pid)
        (tmp_path / pidfile).write_text(f"{pid}\n")
        return pid

    yield start
    for pid in pids:  # whatever a failing test left behind
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_stops_the_wheel_server_and_dockerd_it_started(repo, tmp_path, started):
    wheels, dockerd = started("wheels.pid"), started("dockerd.pid")
    (tmp_path / "env").write_text("SYNCGATE_WHEELS_URL=http://127.0.0.1:1/\n")
    result = _down(repo, tmp_path)
    assert result.returncode == 0
    assert _gone(wheels)
    assert _gone(dockerd)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_kills_what_ignores_sigterm(repo, tmp_path, started):
    stubborn = started("wheels.pid", "trap '' TERM; while :; do sleep 0.1; done")
    time.sleep(0.3)  # let bash install the trap
    result = _down(repo, tmp_path)
    assert result.returncode == 0
    assert "did not stop in 5 s; killing it" in result.stderr
    assert _gone(stubborn)


def test_leaves_an_engine_it_did_not_start_alone(repo, tmp_path, started):
    other = started("not-ours.pid")
    assert _down(repo, tmp_path).returncode == 0
    assert _down(repo, tmp_path).returncode == 0  # twice is fine
    assert not _gone(other, within_s=0.5)

"""SIGKILL of ``syncgate check`` while its real ``vllm serve`` boots: the server tree goes too."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _cmdline(proc: psutil.Process) -> str:
    """A process listed a moment ago may have exited since (a short-lived helper): no command line."""
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children()
    except psutil.Error:
        return []


def test_sigkill_of_check_while_the_server_boots_leaves_no_server(sandbox):
    pytest.importorskip("vllm")
    tag = uuid.uuid4().hex
    cache = os.environ.get("SYNCGATE_CACHE_DIR", str(Path.home() / ".cache" / "syncgate"))
    proc = subprocess.Popen(
        sandbox.argv(["check", "--levels", "serve", "--scenarios", "sequential",
                      "--report-dir", "report"]),
        cwd=sandbox.work, env=sandbox.env(tag, {"SYNCGATE_CACHE_DIR": cache}),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 600  # the first run builds the embedded model
        server = []
        while time.monotonic() < deadline and proc.poll() is None and not server:
            server = [p for p in sandbox.marked(tag) if "vllm_syncgate.serve.shim" in _cmdline(p)]
            time.sleep(0.2)
        assert server, proc.stderr.read().decode() if proc.poll() is not None else "no server"
        # booting: until the API server has spawned its engine core, a child still there 2 s
        # later (under load a short-lived helper child can come and go first)
        while time.monotonic() < deadline and proc.poll() is None:
            if _children(server[0]):
                time.sleep(2)
                if _children(server[0]):
                    break
            time.sleep(0.2)
        assert _children(server[0]), (
            f"check exited ({proc.returncode}): {proc.stderr.read().decode()}"
            if proc.poll() is not None else "the server never spawned its engine core")
        proc.kill()
        proc.wait()
        assert sandbox.wait_unmarked(tag, 10) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sandbox.wait_unmarked(tag, 0)

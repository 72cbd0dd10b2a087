"""The hostile-input suite: run ``syncgate`` as a user would, with bad inputs and signals.

Every probe runs the real CLI in a fresh process, in its own work dir and its own ``TMPDIR``, with
a unique marker in its environment. It then checks what the README promises for bad input: the
expected exit code, one line on stderr (``check``'s ``[  0.0s]`` progress lines aside), no
traceback, no file left that was not there before, and no process left: the whole process table
is walked for the marker, so a reparented grandchild is found too. Every fixture is generated
here, big ones at test time.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

MARKER = "SYNCGATE_HOSTILE_PROBE"
_PROGRESS = re.compile(r"^\[\s*\d+\.\d+s\] ")


@dataclass
class Outcome:
    """What one probe did."""

    code: int
    stdout: str
    stderr: str
    new_files: list[str]
    survivors: list[str]

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if not _PROGRESS.match(line)]


def marked(tag: str) -> list[psutil.Process]:
    """Every live process whose environment carries ``tag`` (this test process excluded)."""
    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(MARKER) == tag:
                found.append(proc)
    return found


def wait_unmarked(tag: str, timeout: float = 10.0) -> list[str]:
    """Descriptions of the marked processes still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive = marked(tag)
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    out = []
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            out.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
            proc.kill()  # do not leak into the next test, whatever this one asserts
    return out


def snapshot(*roots: Path) -> set[str]:
    """Every path under ``roots`` (files, dirs, links), without following links."""
    found = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                found.add(os.path.join(dirpath, name))
    return found


class Sandbox:
    """A work dir and a TMPDIR for one or more CLI runs, with the leftovers checks."""

    marked = staticmethod(marked)
    wait_unmarked = staticmethod(wait_unmarked)

    def __init__(self, base: Path) -> None:
        self.work = base / "work"
        self.tmp = base / "tmp"
        self.work.mkdir()
        self.tmp.mkdir()

    def env(self, tag: str, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, MARKER: tag, "TMPDIR": str(self.tmp), "PYTHONDONTWRITEBYTECODE": "1",
                "SYNCGATE_CACHE_DIR": str(self.tmp / "cache"),
                # the scan's result cache writes by design; a probe counts what bad input leaves
                "SYNCGATE_NO_CACHE": "1", **(extra or {})}

    def argv(self, args: Sequence[str]) -> list[str]:
        return [sys.executable, "-m", "vllm_syncgate.cli", *args]

    def run(self, args: Sequence[str], *, timeout: float = 60, stdin: bytes | None = None,
            env: dict[str, str] | None = None) -> Outcome:
        tag = uuid.uuid4().hex
        before = snapshot(self.work, self.tmp)
        try:
            done = subprocess.run(self.argv(args), cwd=self.work, env=self.env(tag, env),
                                  input=stdin, capture_output=True, timeout=timeout, check=False)
            code, out, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:  # a hang is a finding, reported like any other
            code, out, err = -999, exc.stdout or b"", (exc.stderr or b"") + b"\n<hung>"
        survivors = wait_unmarked(tag)
        new = sorted(snapshot(self.work, self.tmp) - before)
        return Outcome(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                       [os.path.relpath(p, self.work.parent) for p in new], survivors)


@pytest.fixture
def sandbox(tmp_path) -> Sandbox:
    return Sandbox(tmp_path)


def assert_handled(outcome: Outcome, code: int, stderr: str | None = None,
                   files: Sequence[str] = ()) -> None:
    """The README's promise for bad input, all of it."""
    text = outcome.stdout + outcome.stderr
    assert "Traceback" not in text, text[-3000:]
    assert outcome.code == code, f"exit {outcome.code}, expected {code}: {text[-2000:]}"
    lines = outcome.error_lines()
    if code in (0, 1):  # a verdict, not an error: at most a one-line note
        assert len(lines) <= 1, lines
    else:
        assert len(lines) == 1, lines
    if stderr is not None:
        assert lines, stderr
        assert re.search(stderr, lines[-1]), (stderr, lines)
    assert sorted(outcome.new_files) == sorted(files), outcome.new_files
    assert outcome.survivors == [], outcome.survivors


@pytest.fixture
def handled():
    return assert_handled

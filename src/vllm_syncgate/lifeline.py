"""Child process trees that cannot outlive syncgate, however syncgate ends.

syncgate starts trees it must not leak: a ``vllm serve`` (API server, EngineCore, workers) and a
rerun pytest session with its xdist workers. Each runs in its own session, so its process group
names all of it. Three ways out are covered:

- an orderly one (return, exception, Ctrl-C, and SIGTERM/SIGHUP turned into an interrupt by
  :func:`signals_as_interrupt`): the owner's ``finally`` tears the tree down;
- SIGKILL of syncgate, which runs no code at all: a :class:`Reaper`, a tiny watcher process
  holding the read end of a pipe whose write end only syncgate holds, sees end-of-file the moment
  syncgate is gone and SIGKILLs the group;
- the tree's root sees its parent die: ``PR_SET_PDEATHSIG`` (:func:`die_with_parent`).
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_RELEASE = b"release"
# Runs as `python -I -S -c`: no site, no syncgate import, so it starts in a few milliseconds.
_REAPER = """
import os, shutil, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
if sys.stdin.buffer.read() != b"release":
    try:
        os.killpg(int(sys.argv[1]), signal.SIGKILL)
    except OSError:
        pass
    for folder in sys.argv[2:]:
        shutil.rmtree(folder, ignore_errors=True)
"""


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux only).

    Safe as a ``preexec_fn``: it runs in the child between fork and exec, and the setting
    survives the exec.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)


class Reaper:
    """SIGKILLs process group ``pgid`` if this process dies before :meth:`release`, then removes
    the ``folders`` that group owned (the owner's ``finally`` would have)."""

    def __init__(self, pgid: int, folders: Sequence[Path] = ()) -> None:
        self.pgid = pgid
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _REAPER, str(pgid), *map(str, folders)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,  # terminal signals (Ctrl-C, hang-up) never reach it
        )

    def release(self) -> None:
        """The owner tore the group down itself: let the reaper exit without killing."""
        proc, self._proc = self._proc, None
        if proc is None or proc.stdin is None:
            return
        with contextlib.suppress(OSError):
            proc.stdin.write(_RELEASE)
        with contextlib.suppress(OSError):
            proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """Make SIGTERM and SIGHUP unwind like Ctrl-C, so ``finally`` blocks tear trees down."""

    def _raise(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {sig: signal.signal(sig, _raise) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

"""Progress on stderr: one line per message, so a pipe or a CI log stays readable.

Lines never use carriage returns (a rewritten line is noise once piped); ``--quiet`` turns the
whole stream off. :func:`ticking` covers waits that have no progress of their own (a model build,
the HF reference): after ``first_s`` it says what is being waited for, and how long, every
``every_s``.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from vllm_syncgate.escaping import terminal

Say = Callable[[str], None]


def make_say(stream: TextIO | None = None, quiet: bool = False,
             started: float | None = None) -> Say:
    """A ``say`` that prefixes seconds since ``started``; a no-op when ``quiet``."""
    origin = time.monotonic() if started is None else started

    def say(message: str) -> None:
        if quiet:
            return
        line = terminal(message)  # names from a tree or a log: no ESC, CR or newline passes
        print(f"[{time.monotonic() - origin:6.1f}s] {line}", file=stream or sys.stderr, flush=True)

    return say


@contextlib.contextmanager
def ticking(say: Say, what: str, first_s: float = 2.0, every_s: float = 5.0) -> Iterator[None]:
    """Say ``what (N s)`` from ``first_s`` on, every ``every_s``, until the block ends."""
    done = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        wait = first_s
        while not done.wait(wait):
            say(f"{what} ({time.monotonic() - started:.0f} s)")
            wait = every_s

    thread = threading.Thread(target=tick, name="syncgate-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()

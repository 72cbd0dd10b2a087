"""Deterministic "randomness" for the synthetic suite.

A test's outcome in one run is a pure function of (SUITE_SEED, test name, run index), where the
run index is the ``SYNCGATE_REPRO_RUN`` variable the rerun plugin sets before each copy runs.
The same reruns therefore always give the same verdicts, while each test still behaves like a
coin with a chosen failure probability.
"""

import hashlib
import os


def draw(name: str) -> float:
    """A uniform number in [0, 1) fixed by seed, name and run index."""
    key = f"{os.environ.get('SUITE_SEED', '6')}:{name}:{os.environ.get('SYNCGATE_REPRO_RUN', '0')}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def fails(name: str, probability: float) -> bool:
    return draw(name) < probability

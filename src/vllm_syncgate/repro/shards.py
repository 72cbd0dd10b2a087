"""Which share of the reruns one CI job does: ``--shard I/N`` and where ``auto`` finds I and N.

The CI's own matrix is the scheduler: N jobs each run ``syncgate repro LOG --shard I/N`` and
every job works out its share from the log alone, so no job needs to talk to another. Run r of a
test goes to shard ``(r - 1 + offset) mod N``, the offset fixed by the log's digest and the node
id, so every shard gets a near-equal slice of every test and the slices never overlap. Indices
are 1-based on the command line (``--shard 1/4`` .. ``4/4``); Buildkite and Kubernetes count
from 0 and are shifted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vllm_syncgate.errors import UsageError
from vllm_syncgate.safeio import open_regular

SHARD_ENV = "SYNCGATE_SHARD"  # "I/N", 1-based: GitHub Actions sets it from the matrix
COUNT_ENV = "SYNCGATE_SHARD_COUNT"  # N for a Kubernetes Indexed Job (JOB_COMPLETION_INDEX)
_SPEC = re.compile(r"^\s*(\d{1,6})\s*/\s*(\d{1,6})\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise UsageError(f"shard {self.index}/{self.count}: need 1 <= I <= N")

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def filename(self) -> str:
        return f"repro-shard-{self.index}-of-{self.count}.json"

    def runs_of(self, key: str, target: str, runs: int) -> list[int]:
        """This shard's run indices (1..``runs``) of ``target``."""
        offset = _number(f"{key}:{target}") % self.count
        return [r for r in range(1, runs + 1) if (r - 1 + offset) % self.count == self.index - 1]

    def seed(self, key: str) -> int:
        """The pytest-randomly seed of this shard, from the log (``key``) and the index."""
        return _number(f"{key}:seed:{self.label}") % (1 << 32)


def _number(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def parse_shard(text: str, what: str = "--shard") -> Shard:
    """``I/N`` (1-based) or a usage error naming ``what``."""
    match = _SPEC.match(text)
    if not match:
        raise UsageError(f"{what} {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"{what} {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return Shard(index, count)


def _integer(env: Mapping[str, str], name: str, low: int) -> int:
    value = env[name].strip()
    if not (value.isascii() and value.isdigit()) or int(value) < low:
        raise UsageError(f"--shard auto: ${name}={env[name]!r} is not an integer >= {low}")
    return int(value)


def shard_from_env(env: Mapping[str, str], count: int | None = None) -> Shard:
    """``--shard auto``: $SYNCGATE_SHARD, else Buildkite's parallel job, else a Kubernetes
    Indexed Job's ``JOB_COMPLETION_INDEX`` with ``count`` (``--shard-count``) or
    $SYNCGATE_SHARD_COUNT."""
    if env.get(SHARD_ENV):
        return parse_shard(env[SHARD_ENV], f"--shard auto: ${SHARD_ENV}")
    if "BUILDKITE_PARALLEL_JOB" in env:
        if "BUILDKITE_PARALLEL_JOB_COUNT" not in env:
            raise UsageError("--shard auto: $BUILDKITE_PARALLEL_JOB is set but "
                             "$BUILDKITE_PARALLEL_JOB_COUNT is not")
        index = _integer(env, "BUILDKITE_PARALLEL_JOB", 0)
        total = _integer(env, "BUILDKITE_PARALLEL_JOB_COUNT", 1)
        return _checked(index, total, "$BUILDKITE_PARALLEL_JOB")
    if "JOB_COMPLETION_INDEX" in env:
        if count is None:
            if not env.get(COUNT_ENV):
                raise UsageError(f"--shard auto: $JOB_COMPLETION_INDEX needs the job's "
                                 f"completions as --shard-count or ${COUNT_ENV}")
            count = _integer(env, COUNT_ENV, 1)
        return _checked(_integer(env, "JOB_COMPLETION_INDEX", 0), count, "$JOB_COMPLETION_INDEX")
    raise UsageError(f"--shard auto: no shard index in the environment (set ${SHARD_ENV}=I/N, "
                     f"or run as a Buildkite parallel job or a Kubernetes Indexed Job)")


def _checked(zero_based: int, count: int, what: str) -> Shard:
    if zero_based >= count:
        raise UsageError(f"--shard auto: {what}={zero_based} is not below the shard count {count}")
    return Shard(zero_based + 1, count)


def log_digest(path: Path) -> str:
    """sha256 of the log file: what ties shard files to the one log they rerun."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

"""What a CI log says about a run, independent of the format it came in.

Every parser (GitHub job logs, ``gh`` output, run-log zips, plain pytest output, vllm-ascend's
per-file runner lines, JUnit, pytest-reportlog) produces the same :class:`CiLog`, so the rerun
engine and the report never care where the evidence came from.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class CiOutcome(str, enum.Enum):
    """How a test went wrong in CI."""

    FAILED = "failed"  # the test body failed
    ERROR = "error"  # setup/teardown (fixture) error
    COLLECTION_ERROR = "collection_error"  # the file did not even import/collect


@dataclass(frozen=True)
class CiFailure:
    """One failing or erroring test (or file) as the log reported it.

    ``nodeid`` is exactly what the log said; it is validated against the local test tree before
    anything runs. ``address`` is set only for JUnit xunit2, whose ``classname``/``name`` pair has
    to be mapped back onto a node id with the locally collected tree. ``predecessors`` are the
    tests the same CI worker ran just before this one, oldest first.
    """

    nodeid: str
    outcome: CiOutcome
    job: str = ""
    worker: str = "main"
    predecessors: tuple[str, ...] = ()
    detail: str = ""
    address: tuple[str, str] | None = None


@dataclass
class CiLog:
    """Everything a log told us: failures, the order around them, the seed and the environment."""

    source: str
    format: str
    failures: list[CiFailure] = field(default_factory=list)
    seed: int | None = None
    env: dict[str, Any] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    truncated: bool = False
    annotations: list[str] = field(default_factory=list)
    tests_seen: int = 0

    def failed_nodeids(self) -> list[str]:
        """Failed and errored node ids, first-seen order, no duplicates."""
        return list(dict.fromkeys(f.nodeid for f in self.failures))

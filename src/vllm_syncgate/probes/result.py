"""What a probe found."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vllm_syncgate.audit.budgets import AllowRule
from vllm_syncgate.audit.events import StepKind, SyncEvent
from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.audit.verdict import StepDecisions, decide


class ProblemCode(str, enum.Enum):
    WRONG_VALUES = "wrong_values"  # the host read poison or someone else's rows
    RAISED = "raised"  # the method raised (e.g. a batch that does not fit the buffer)
    BLOCKING_READBACK = "blocking_readback"  # a device tensor was read synchronously
    UNEXPECTED_SYNC = "unexpected_sync"  # a device/stream sync or an extra event wait
    BLOCKING_COPY = "blocking_copy"  # a copy the host had to wait for
    MISSING_TRANSFER = "missing_transfer"  # no async copy, or no event recorded after it
    WRONG_STREAM = "wrong_stream"  # work on the wrong stream, or without the cross-stream wait
    BUFFER_TOO_SMALL = "buffer_too_small"
    BUFFER_WASTE = "buffer_waste"
    NOT_PINNED = "not_pinned"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Problem:
    code: ProblemCode
    message: str
    site: str = ""

    def __str__(self) -> str:
        where = f" at {self.site}" if self.site else ""
        return f"{self.code.value}: {self.message}{where}"


@dataclass
class ProbeResult:
    """The outcome of one probe: problems (none means pass), sync counts, and what it returned."""

    name: str
    problems: list[Problem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    events: list[SyncEvent] = field(default_factory=list)
    value: Any = None

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def codes(self) -> set[ProblemCode]:
        return {p.code for p in self.problems}

    def add(self, code: ProblemCode, message: str, site: str = "") -> None:
        self.problems.append(Problem(code, message, site))

    def describe(self) -> str:
        if self.passed:
            return f"{self.name}: ok {self.counts}"
        return f"{self.name}: " + "; ".join(str(p) for p in self.problems)


def decide_call(events: Sequence[SyncEvent], *contract: AllowRule) -> StepDecisions:
    """The verdict's decision on each sync of one probed call: allowed by the probe's contract
    (its rules' ``max_per_step`` applied), or counted, which is a problem."""
    [judged] = decide([Step(0, StepKind.DECODE, list(events))], contract).steps
    return judged

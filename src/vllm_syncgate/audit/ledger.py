"""The ledger: sync events grouped into runner steps.

A step is opened by whoever knows where a runner step starts (a test, or the live backend wrapping
``execute_model``). Events recorded while no step is open belong to ``StepKind.OUTSIDE`` (load,
warm-up, graph capture), which budgets do not limit. The ledger is thread-safe because vLLM's
async output thread and the model thread both issue copies.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from vllm_syncgate.audit.events import CallSite, StepKind, SyncEvent, SyncKind, caller_site


@dataclass
class Step:
    """One runner step and the syncs it issued."""

    index: int
    kind: StepKind
    events: list[SyncEvent] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return dict(Counter(e.kind.value for e in self.events))

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": self.kind.value,
            "counts": self.counts(),
            "meta": self.meta,
            "events": [e.to_json() for e in self.events],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        return cls(
            index=int(data["index"]),
            kind=StepKind(data["kind"]),
            events=[SyncEvent.from_json(e) for e in data.get("events", [])],
            meta=dict(data.get("meta", {})),
        )


@dataclass(frozen=True)
class CrossThreadHold:
    """A copy on one thread held by another thread's blocking memcpy (the #22754 stall)."""

    held_s: float
    api: str  # the held copy
    holder: str  # the blocking memcpy that held it
    site: CallSite  # where the held copy was issued
    step: int | None


StepSink = Callable[[Step], None]


class Ledger:
    """Collects sync events into steps, or hands each finished step to a sink (the journal).

    With a sink the ledger keeps no finished step: a server may run for days, and the sink is
    the record. Without one (tests, the simulated accelerator) it keeps every step in ``steps``.
    """

    def __init__(self, on_step_end: StepSink | None = None) -> None:
        self._lock = threading.RLock()
        self._on_step_end = on_step_end
        self.steps: list[Step] = []
        self.outside: list[SyncEvent] = []
        self._open: Step | None = None
        self.holds: list[CrossThreadHold] = []
        self._next_index = 0

    # --- steps -------------------------------------------------------------------------------
    def begin_step(self, kind: StepKind = StepKind.DECODE, **meta: Any) -> Step:
        with self._lock:
            if self._open is not None:
                self.end_step()
            step = Step(index=self._next_index, kind=StepKind(kind), meta=dict(meta))
            self._next_index += 1
            if self._on_step_end is None:
                self.steps.append(step)
            self._open = step
            return step

    def end_step(self, kind: StepKind | None = None, **meta: Any) -> Step | None:
        """Close the open step; ``kind`` may be corrected now that the step's work is known."""
        with self._lock:
            step, self._open = self._open, None
            if step is None:
                return None
            if kind is not None and kind != step.kind:
                step.kind = StepKind(kind)
                step.events = [_with_step(e, step) for e in step.events]
            step.meta.update(meta)
        if self._on_step_end is not None:
            self._on_step_end(step)
        return step

    @contextmanager
    def step(self, kind: StepKind = StepKind.DECODE, **meta: Any) -> Iterator[Step]:
        opened = self.begin_step(kind, **meta)
        try:
            yield opened
        finally:
            if self._open is opened:
                self.end_step()

    @property
    def current_step(self) -> Step | None:
        return self._open

    # --- events ------------------------------------------------------------------------------
    def record(
        self,
        kind: SyncKind,
        api: str,
        *,
        site: CallSite | None = None,
        blocked_s: float = 0.0,
        detail: str = "",
    ) -> SyncEvent:
        if site is None:
            site = caller_site(skip=2)
        with self._lock:
            step = self._open
            event = SyncEvent(
                kind=SyncKind(kind),
                api=api,
                site=site,
                step=step.index if step else None,
                step_kind=step.kind if step else StepKind.OUTSIDE,
                blocked_s=blocked_s,
                detail=detail,
            )
            (step.events if step else self.outside).append(event)
        return event

    @property
    def events(self) -> list[SyncEvent]:
        with self._lock:
            return [e for s in self.steps for e in s.events] + list(self.outside)

    def counts(self, step_kind: StepKind | None = None) -> dict[str, int]:
        """Totals by sync kind; all events, or only those inside steps of ``step_kind``."""
        events = self.events if step_kind is None else [
            e for s in self.steps if s.kind == step_kind for e in s.events
        ]
        return dict(Counter(e.kind.value for e in events))

    def blocked_seconds(self) -> float:
        return sum(e.blocked_s for e in self.events)

    def record_hold(self, held_s: float, api: str, *, holder: str, site: CallSite | None = None) -> None:
        """Another thread's copy ``api`` was held ``held_s`` by a blocking memcpy (``holder``)."""
        with self._lock:
            step = self._open
            self.holds.append(CrossThreadHold(
                held_s, api, holder, site or caller_site(skip=2), step.index if step else None
            ))

    def held_seconds(self) -> float:
        """Cross-thread cost: time other threads' copies waited for a blocking memcpy.

        Kept apart from :meth:`blocked_seconds` because the thread that pays it is not the one
        that synced; it is what vLLM #22760 removed (#22754).
        """
        with self._lock:
            return sum(h.held_s for h in self.holds)

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "steps": [s.to_json() for s in self.steps],
                "outside": [e.to_json() for e in self.outside],
                "counts": self.counts(),
            }


def _with_step(event: SyncEvent, step: Step) -> SyncEvent:
    return SyncEvent(
        kind=event.kind,
        api=event.api,
        site=event.site,
        step=step.index,
        step_kind=step.kind,
        blocked_s=event.blocked_s,
        detail=event.detail,
    )

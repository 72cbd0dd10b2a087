"""Judging a ledger against a budget: which step kinds exceeded which limits, and where.

This is the only place that decides whether a sync counts: :func:`decide` gives every event its
:class:`Decision` (counted, or allowed by which rule, ``max_per_step`` applied), and the table,
report.json, the PNG, the check judge, audit-run statistics and the probes all read those.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from vllm_syncgate.audit.budgets import AllowRule, Budget
from vllm_syncgate.audit.events import LOGPROB_REQS, SYNC_KINDS, StepKind, SyncEvent
from vllm_syncgate.audit.ledger import Step


@dataclass
class Breach:
    """One (step kind, sync kind) over its limit, with the steps and call sites responsible."""

    step_kind: StepKind
    kind: str
    limit: int
    worst: int
    steps: list[int] = field(default_factory=list)
    sites: Counter[str] = field(default_factory=Counter)
    symbols: dict[str, str] = field(default_factory=dict)  # site -> module:qualname (allow rules)

    def describe(self) -> str:
        top = ", ".join(f"{site} (x{n})" for site, n in self.sites.most_common(3))
        return (
            f"{self.step_kind.value} steps: {self.kind} up to {self.worst} per step "
            f"(budget {self.limit}) in {len(self.steps)} step(s) at {top}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "step_kind": self.step_kind.value,
            "kind": self.kind,
            "limit": self.limit,
            "worst": self.worst,
            "steps": self.steps[:50],
            "num_steps": len(self.steps),
            "sites": dict(self.sites.most_common()),
            "symbols": {site: self.symbols[site] for site in self.sites if site in self.symbols},
        }


class Decision(NamedTuple):
    """What the verdict made of one event: counted against the limits, or allowed by ``rule``.

    A tuple because the check makes one per sync of every journaled step.
    """

    event: SyncEvent
    rule: AllowRule | None = None

    @property
    def counted(self) -> bool:
        return self.rule is None


@dataclass(frozen=True)
class StepDecisions:
    """One runner step and the decision on each of its events, in the order they happened."""

    index: int
    kind: StepKind
    decisions: tuple[Decision, ...]

    def kinds(self, *, with_allowed: bool = False) -> Counter[str]:
        """Syncs by kind: the counted ones (what limits apply to), or allow-listed ones too."""
        return Counter(d.event.kind.value for d in self.decisions if with_allowed or d.counted)

    @property
    def allowed(self) -> list[Decision]:
        return [d for d in self.decisions if not d.counted]


@dataclass(frozen=True)
class Decisions:
    """Every runner step judged, and the statistics every report reads from those decisions."""

    steps: tuple[StepDecisions, ...]

    @property
    def num_steps(self) -> dict[str, int]:
        """Steps by step kind."""
        return dict(Counter(s.kind.value for s in self.steps))

    @property
    def allowed(self) -> Counter[str]:
        """Allow-listed syncs by call-site symbol."""
        return Counter(d.event.site.symbol for s in self.steps for d in s.allowed)

    def mean_per_step(self, *, with_allowed: bool) -> dict[str, dict[str, float]]:
        """Mean syncs per step, by step kind then sync kind: counted only, or allow-listed too."""
        return {kind: self.mean_per_step_of(kind, with_allowed=with_allowed)
                for kind in self.num_steps}

    def mean_per_step_of(self, step_kind: str, *, with_allowed: bool) -> dict[str, float]:
        """Mean syncs of each kind per step of ``step_kind``; zeros when there was none."""
        chosen = [s for s in self.steps if s.kind.value == step_kind]
        totals: Counter[str] = Counter()
        for step in chosen:
            totals.update(step.kinds(with_allowed=with_allowed))
        return {kind: totals[kind] / len(chosen) if chosen else 0.0 for kind in SYNC_KINDS}


def decide(steps: Iterable[Step], rules: Sequence[AllowRule] = ()) -> Decisions:
    """Judge each event of each runner step: the first rule matching it allows it, unless that
    rule's ``max_per_step`` is used up in the step, in which case the event counts.

    A ``logprobs_only`` rule applies only in steps whose meta says they served logprob requests.
    Steps of kind ``outside`` are not runner steps and are left out.
    """
    judged = []
    for step in steps:
        if step.kind is StepKind.OUTSIDE:
            continue
        logprob_step = bool(step.meta.get(LOGPROB_REQS))
        used: Counter[AllowRule] = Counter()
        decisions = []
        for event in step.events:
            rule = None
            for candidate in rules:
                if candidate.matches(event, logprob_step):
                    rule = candidate
                    break
            if rule is not None:
                if rule.max_per_step is not None and used[rule] >= rule.max_per_step:
                    rule = None
                else:
                    used[rule] += 1
            decisions.append(Decision(event, rule))
        judged.append(StepDecisions(step.index, step.kind, tuple(decisions)))
    return Decisions(tuple(judged))


@dataclass
class Verdict:
    """The result of a budget check over many steps, with the decision on every event."""

    budget: Budget
    breaches: list[Breach]
    decisions: Decisions

    @property
    def passed(self) -> bool:
        return not self.breaches

    @property
    def steps(self) -> tuple[StepDecisions, ...]:
        return self.decisions.steps

    @property
    def allowed(self) -> Counter[str]:
        return self.decisions.allowed

    @property
    def num_steps(self) -> dict[str, int]:
        return self.decisions.num_steps

    @property
    def per_step_kind(self) -> dict[str, dict[str, float]]:
        """Mean counted syncs per step (allow-listed sites excluded), by step kind."""
        return self.decisions.mean_per_step(with_allowed=False)

    @property
    def per_step_kind_with_allowed(self) -> dict[str, dict[str, float]]:
        return self.decisions.mean_per_step(with_allowed=True)

    def to_json(self) -> dict[str, Any]:
        """``mean_per_step`` counts what the budget counts; ``mean_per_step_with_allowed`` adds
        the allow-listed syncs."""
        return {
            "budget": self.budget.label,
            "passed": self.passed,
            "breaches": [b.to_json() for b in self.breaches],
            "allowed": dict(self.allowed),
            "mean_per_step": self.per_step_kind,
            "mean_per_step_with_allowed": self.per_step_kind_with_allowed,
            "num_steps": self.num_steps,
        }


def evaluate(steps: Sequence[Step], budget: Budget) -> Verdict:
    """Decide every event against the budget's allow rules, then compare each step's counted
    syncs with the budget's limits."""
    decisions = decide(steps, budget.allow)
    breaches: dict[tuple[StepKind, str], Breach] = {}
    for step in decisions.steps:
        sites: dict[str, Counter[str]] = {}  # counted syncs by kind, then call site
        symbols: dict[str, str] = {}
        for decision in step.decisions:
            if decision.rule is None:
                event = decision.event
                sites.setdefault(event.kind.value, Counter())[str(event.site)] += 1
                symbols[str(event.site)] = event.site.symbol
        for kind, at in sites.items():
            count, limit = sum(at.values()), budget.limit(step.kind, kind)
            if count <= limit:
                continue
            breach = breaches.setdefault(
                (step.kind, kind), Breach(step.kind, kind, limit, worst=count)
            )
            breach.worst = max(breach.worst, count)
            breach.steps.append(step.index)
            breach.sites.update(at)
            breach.symbols.update((site, symbols[site]) for site in at)
    ordered = sorted(breaches.values(), key=lambda b: (b.step_kind.value, b.kind))
    return Verdict(budget, ordered, decisions)

"""Judging a ledger against a budget: which step kinds exceeded which limits, and where."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from syncgate.audit.budgets import AllowRule, Budget
from syncgate.audit.events import LOGPROB_REQS, SYNC_KINDS, StepKind
from syncgate.audit.ledger import Step


@dataclass
class Breach:
    """One (step kind, sync kind) over its limit, with the steps and call sites responsible."""

    step_kind: StepKind
    kind: str
    limit: int
    worst: int
    steps: list[int] = field(default_factory=list)
    sites: Counter[str] = field(default_factory=Counter)

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
        }


@dataclass
class Verdict:
    """The result of a budget check over many steps."""

    budget: Budget
    breaches: list[Breach]
    allowed: Counter[str]
    per_step_kind: dict[str, dict[str, float]]
    num_steps: dict[str, int]

    @property
    def passed(self) -> bool:
        return not self.breaches

    def to_json(self) -> dict[str, Any]:
        return {
            "budget": self.budget.label,
            "passed": self.passed,
            "breaches": [b.to_json() for b in self.breaches],
            "allowed": dict(self.allowed),
            "mean_per_step": self.per_step_kind,
            "num_steps": self.num_steps,
        }


def evaluate(steps: Sequence[Step], budget: Budget) -> Verdict:
    """Count each step's non-allow-listed syncs and compare them with the budget's limits.

    An allow rule with ``max_per_step`` covers that many events per step; the rest count.
    """
    breaches: dict[tuple[StepKind, str], Breach] = {}
    allowed: Counter[str] = Counter()
    totals: dict[str, Counter[str]] = {}
    num_steps: Counter[str] = Counter()
    for step in steps:
        if step.kind is StepKind.OUTSIDE:
            continue
        num_steps[step.kind.value] += 1
        counted: Counter[str] = Counter()
        sites: dict[str, Counter[str]] = {}
        used: Counter[AllowRule] = Counter()
        logprob_step = bool(step.meta.get(LOGPROB_REQS))
        for event in step.events:
            rule = budget.allowed_by(event, logprob_step)
            if rule is not None and (rule.max_per_step is None or used[rule] < rule.max_per_step):
                used[rule] += 1
                allowed[event.site.symbol] += 1
                continue
            counted[event.kind.value] += 1
            sites.setdefault(event.kind.value, Counter())[str(event.site)] += 1
        totals.setdefault(step.kind.value, Counter()).update(counted)
        for kind, count in counted.items():
            limit = budget.limit(step.kind, kind)
            if count <= limit:
                continue
            breach = breaches.setdefault(
                (step.kind, kind), Breach(step.kind, kind, limit, worst=count)
            )
            breach.worst = max(breach.worst, count)
            breach.steps.append(step.index)
            breach.sites.update(sites[kind])
    per_step_kind = {
        sk: {kind: totals.get(sk, Counter())[kind] / n for kind in SYNC_KINDS}
        for sk, n in num_steps.items()
    }
    ordered = sorted(breaches.values(), key=lambda b: (b.step_kind.value, b.kind))
    return Verdict(budget, ordered, allowed, per_step_kind, dict(num_steps))

"""One unit-level check's outcome, and a set of them, in the shape the report and pytest read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class UnitCheck:
    """A named check on one upstream method or class; ``site`` is ``file:line`` when known."""

    name: str
    target: str
    passed: bool
    detail: str
    site: str = ""
    duration_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "target": self.target, "passed": self.passed,
                "detail": self.detail, "site": self.site, "duration_s": round(self.duration_s, 3)}


@dataclass
class UnitReport:
    """The checks of one unit-level run, with notes (which mode, which tree, what was skipped)."""

    checks: list[UnitCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # (file relative to the package, qualname) of the probed package's functions that ran, when
    # the run was traced (unit/ran.py); None when it was not
    ran: list[tuple[str, str]] | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def failures(self) -> list[UnitCheck]:
        return [c for c in self.checks if not c.passed]

    def describe(self) -> str:
        """One line per failing check (or a count when all pass): an assert message for pytest."""
        if self.passed:
            return f"{len(self.checks)} checks passed"
        return "\n".join(f"{c.name} [{c.target}]: {c.detail}"
                         + (f" at {c.site}" if c.site and c.site not in c.detail else "")
                         for c in self.failures())

"""A live-audit directory as one server run: every process's journal, merged for a verdict.

The vLLM plugin (:mod:`vllm_syncgate.vllm_plugin`) journals every process it loads in into one
directory; :mod:`vllm_syncgate.audit.journal` owns that format and reads each file. Use one fresh
directory per server run: every journal in it is read as part of the same run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_syncgate.audit.budgets import Budget, BudgetSet
from vllm_syncgate.audit.journal import AuditProcess, WorkerHeaders, read_journals
from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.audit.verdict import Verdict, decide, evaluate


@dataclass
class AuditRun(WorkerHeaders):
    """Everything one server run journaled, with the worker steps ready for a budget verdict."""

    directory: Path
    processes: list[AuditProcess]

    @property
    def workers(self) -> list[AuditProcess]:
        return [p for p in self.processes if p.role == "worker"]

    @property
    def steps(self) -> list[Step]:
        """All worker steps (every rank's, in journal order)."""
        return [s for w in self.workers for s in w.steps]

    def select_budget(self, budgets: BudgetSet) -> Budget:
        """The budget of ``budgets`` for the runner and speculation mode this run used."""
        return budgets.select(self.runner, self.speculation)

    def verdict(self, budget: Budget) -> Verdict:
        return evaluate(self.steps, budget)

    def num_steps(self) -> dict[str, int]:
        """Runner steps by step kind, as the verdict counts them."""
        return decide(self.steps).num_steps

    def mean_per_step(self) -> dict[str, dict[str, float]]:
        """Mean syncs per step by step kind and sync kind, allow-listed sites included.

        What a budget counts depends on its allow rules: ``verdict(budget).per_step_kind``.
        """
        return decide(self.steps).mean_per_step(with_allowed=True)

    def to_json(self) -> dict[str, Any]:
        """``mean_per_step`` (kept for compatibility) equals ``mean_per_step_with_allowed``."""
        means = self.mean_per_step()
        return {
            "directory": str(self.directory),
            "processes": [
                {"path": p.path.name, "header": p.header, "steps": len(p.steps), "torn": p.torn}
                for p in self.processes
            ],
            "num_steps": self.num_steps(),
            "mean_per_step": means,
            "mean_per_step_with_allowed": means,
        }


def load_audit_dir(directory: str | Path) -> AuditRun:
    """Read every journal the plugin wrote into ``directory`` during one server run."""
    directory = Path(directory)
    return AuditRun(directory=directory, processes=read_journals(directory))


__all__ = [
    "AuditRun",
    "load_audit_dir",
]

"""Reading a live-audit directory back: one journal per ``vllm serve`` process, merged into a run.

The vLLM plugin (:mod:`syncgate.vllm_plugin`) writes ``<role>-<pid>.jsonl`` into
``SYNCGATE_AUDIT_DIR`` in every process it loads in. Each journal starts with a ``header`` record
(role, pid, device, versions); a worker appends a second header once its model runner exists
(runner ``v1``/``v2``, speculation on/off), then one ``step`` record per runner step, flushed at
once because vLLM kills its EngineCore and workers at shutdown. Later header fields override
earlier ones. A torn last line (a process killed mid-write) is dropped; a broken line anywhere else
means the journal is not ours or was damaged, and is an error. Use one fresh directory per server
run: every ``*.jsonl`` in it is read as part of the same run.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncgate.audit.budgets import Budget, BudgetSet
from syncgate.audit.events import SYNC_KINDS
from syncgate.audit.ledger import Step
from syncgate.audit.verdict import Verdict, evaluate
from syncgate.errors import AuditDirError

JOURNAL_GLOB = "*.jsonl"
ROLES = ("api", "engine", "worker")


@dataclass
class AuditProcess:
    """One process's journal: merged header fields and the runner steps it recorded."""

    path: Path
    header: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    torn: bool = False

    @property
    def role(self) -> str:
        return str(self.header.get("role", "unknown"))

    @property
    def pid(self) -> int:
        return int(self.header.get("pid", 0))

    @property
    def runner(self) -> str | None:
        runner = self.header.get("runner")
        return str(runner) if runner is not None else None

    @property
    def speculation(self) -> bool | None:
        spec = self.header.get("speculation")
        return bool(spec) if spec is not None else None

    @property
    def device(self) -> str:
        return str(self.header.get("device", "unknown"))

    @property
    def versions(self) -> dict[str, str]:
        return dict(self.header.get("versions", {}))


@dataclass
class AuditRun:
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

    def _worker_field(self, name: str) -> Any:
        values = {getattr(w, name) for w in self.workers} - {None}
        if not values:
            raise AuditDirError(
                f"{self.directory}: no worker journal says which {name} ran "
                "(did the plugin load in the worker? is SYNCGATE_AUDIT_DIR shared?)"
            )
        if len(values) > 1:
            raise AuditDirError(f"{self.directory}: workers disagree on {name}: {sorted(values)}")
        return values.pop()

    @property
    def runner(self) -> str:
        return str(self._worker_field("runner"))

    @property
    def speculation(self) -> bool:
        return bool(self._worker_field("speculation"))

    @property
    def device(self) -> str:
        return str(self._worker_field("device"))

    def select_budget(self, budgets: BudgetSet) -> Budget:
        """The budget of ``budgets`` for the runner and speculation mode this run used."""
        return budgets.select(self.runner, self.speculation)

    def verdict(self, budget: Budget) -> Verdict:
        return evaluate(self.steps, budget)

    def num_steps(self) -> dict[str, int]:
        return dict(Counter(s.kind.value for s in self.steps))

    def mean_per_step(self) -> dict[str, dict[str, float]]:
        """Mean syncs per step by step kind and sync kind, allow-listed sites included."""
        totals: dict[str, Counter[str]] = {}
        for step in self.steps:
            totals.setdefault(step.kind.value, Counter()).update(step.counts())
        steps = self.num_steps()
        return {
            kind: {sync: totals[kind][sync] / steps[kind] for sync in SYNC_KINDS} for kind in totals
        }

    def series(self) -> list[dict[str, Any]]:
        """Per-step counts in order, for plotting syncs per step."""
        return [
            {"index": s.index, "kind": s.kind.value, "pid": w.pid, **s.counts()}
            for w in self.workers
            for s in w.steps
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "processes": [
                {"path": p.path.name, "header": p.header, "steps": len(p.steps), "torn": p.torn}
                for p in self.processes
            ],
            "num_steps": self.num_steps(),
            "mean_per_step": self.mean_per_step(),
        }


def read_process_journal(path: Path) -> AuditProcess:
    """Parse one journal; a broken line other than the last raises :class:`AuditDirError`."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise AuditDirError(f"{path}: cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise AuditDirError(f"{path}: is not UTF-8 text") from None
    header: dict[str, Any] = {}
    steps: list[Step] = []
    torn = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            kind = record["type"]
            if kind == "header":
                header.update({k: v for k, v in record.items() if k != "type"})
            elif kind == "step":
                steps.append(Step.from_json(record))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            if number == len(lines):
                torn = True  # killed mid-write: vLLM SIGKILLs its children at shutdown
                continue
            raise AuditDirError(f"{path}:{number}: not a syncgate journal record ({exc})") from None
    if not header:
        raise AuditDirError(f"{path}: has no header record (not a syncgate journal)")
    return AuditProcess(path=path, header=header, steps=steps, torn=torn)


def load_audit_dir(directory: str | Path) -> AuditRun:
    """Read every journal in ``directory`` (written by the plugin with SYNCGATE_AUDIT_DIR)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise AuditDirError(f"{directory}: audit directory does not exist")
    paths = sorted(directory.glob(JOURNAL_GLOB))
    if not paths:
        raise AuditDirError(
            f"{directory}: no journals (was the server started with SYNCGATE_AUDIT_DIR set "
            "and syncgate installed in its environment?)"
        )
    processes = [read_process_journal(p) for p in paths]
    processes.sort(key=lambda p: (ROLES.index(p.role) if p.role in ROLES else len(ROLES), p.pid))
    return AuditRun(directory=directory, processes=processes)


__all__ = [
    "AuditProcess",
    "AuditRun",
    "load_audit_dir",
    "read_process_journal",
]

"""One process's live audit: its journal, its backend, and when each gets armed.

Every ``vllm serve`` process (API server, EngineCore, worker) writes a journal
(:mod:`vllm_syncgate.audit.journal`) with a header naming it. Only a process that imports a model
runner module gets a backend, so the API server is left alone; the runner's construction adds a
second header (runner, speculation) and, if asked, swaps in a mutant. Steps are written and
flushed as they end, because vLLM kills its children at shutdown and nothing after the last step
would run. The journal is the record: the ledger hands each finished step to it and keeps none,
and waits recorded outside any step (load, warm-up, an output thread between steps), which
budgets do not judge, are dropped at each step's end, so a long server run does not grow.
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from vllm_syncgate import __version__
from vllm_syncgate.audit.backends import backend_class
from vllm_syncgate.audit.backends.base import RUNNER_CLASSES, AuditBackend
from vllm_syncgate.audit.backends.imports import PostImportHook
from vllm_syncgate.audit.journal import JournalWriter, journal_name
from vllm_syncgate.audit.ledger import Ledger, Step
from vllm_syncgate.audit.mutants import apply_mutant, check_mutant
from vllm_syncgate.errors import AuditDirError


def process_role() -> str:
    """``api``, ``engine`` or ``worker``, from the process names vLLM gives its children."""
    name = multiprocessing.current_process().name
    if name.startswith("EngineCore"):
        return "engine"
    if name.startswith("VllmWorker"):
        return "worker"
    return "api" if name == "MainProcess" else name.lower()


def versions() -> dict[str, str]:
    found = {"python": platform.python_version(), "syncgate": __version__}
    for name in ("torch", "vllm", "vllm_ascend", "torch_npu"):
        module = sys.modules.get(name)
        if module is not None:
            found[name] = str(getattr(module, "__version__", "unknown"))
    return found


class LiveAudit:
    """Arms the audit in this process; the backend comes when a runner module is imported."""

    def __init__(self, directory: Path, device: str, mutant: str | None = None) -> None:
        self.directory = directory
        self.device = device
        self.mutant = check_mutant(mutant) if mutant else None
        self.backend_cls = backend_class(device)
        role = process_role()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self.journal = JournalWriter(
                directory / journal_name(role, os.getpid()),
                role=role,
                pid=os.getpid(),
                ppid=os.getppid(),
                process_name=multiprocessing.current_process().name,
                device=device,
                mutant=self.mutant,
                versions=versions(),
                started=time.time(),
            )
        except OSError as exc:
            raise AuditDirError(f"{directory}: cannot write audit journal ({exc.strerror})") from None
        self.ledger = Ledger(on_step_end=self._write_step)
        self.backend: AuditBackend | None = None
        self._hook = PostImportHook(tuple(RUNNER_CLASSES), self._on_runner_module)

    def start(self) -> LiveAudit:
        self._hook.install()
        return self

    def stop(self) -> None:
        """Undo every patch (tests; a real server process is killed instead)."""
        self._hook.uninstall()
        if self.backend is not None:
            self.backend.uninstall()
        self.journal.close()

    def _on_runner_module(self, module: Any) -> None:
        if self.backend is None:
            self.backend = self.backend_cls(self.ledger, on_runner=self._on_runner)
            self.backend.install()
        self.backend.instrument_module(module)

    def _on_runner(self, runner: Any, info: dict[str, Any]) -> None:
        if self.mutant:
            apply_mutant(runner, self.mutant)
        self.journal.write_header(
            role="worker", pid=os.getpid(), device=self.device, versions=versions(), **info
        )

    def _write_step(self, step: Step) -> None:
        self.journal(step)
        self.ledger.outside.clear()  # load/warm-up/between-step waits: not judged, not kept

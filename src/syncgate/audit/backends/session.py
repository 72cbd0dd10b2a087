"""One process's live audit: its journal, its backend, and when each gets armed.

Every ``vllm serve`` process (API server, EngineCore, worker) writes ``<role>-<pid>.jsonl`` with a
header naming it. Only a process that imports a model runner module gets a backend, so the API
server is left alone; the runner's construction adds a second header (runner, speculation) and,
if asked, swaps in a mutant. Steps are written and flushed as they end, because vLLM kills its
children at shutdown and nothing after the last step would run. Once written, a step's events are
dropped from memory, and so are waits recorded outside any step (load, warm-up, an output thread
between steps), which budgets do not judge: the journal is the record, and a long server run must
not grow.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from syncgate import __version__
from syncgate.audit.backends import backend_class
from syncgate.audit.backends.base import RUNNER_CLASSES, AuditBackend
from syncgate.audit.backends.imports import PostImportHook
from syncgate.audit.events import SyncEvent
from syncgate.audit.ledger import JsonlJournal, Ledger, Step
from syncgate.audit.mutants import apply_mutant, check_mutant
from syncgate.errors import AuditDirError

JOURNAL_FORMAT = 1


class ProcessJournal(JsonlJournal):
    """A step journal that can also add header records as the process learns what it is.

    It runs once per step inside the decode loop, so lines are compact and unsorted, and the
    parts of an event that repeat every step (kind, API, call site) are serialised once and
    reused; the line parses to exactly ``{"type": "step", **step.to_json()}``.
    """

    _SEPARATORS = (",", ":")
    _MAX_FRAGMENTS = 1024

    def __init__(self, path: str, header: dict[str, Any] | None = None) -> None:
        self._fragments: dict[tuple[Any, ...], str] = {}
        super().__init__(path, header)

    def _dumps(self, obj: Any) -> str:
        return json.dumps(obj, separators=self._SEPARATORS)

    def _write(self, obj: dict[str, Any]) -> None:
        self._write_line(self._dumps(obj))

    def _write_line(self, line: str) -> None:
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def write_header(self, **fields: Any) -> None:
        self._write({"type": "header", **fields})

    def __call__(self, step: Step) -> None:
        events = ",".join(self._event_json(e) for e in step.events)
        self._write_line(
            f'{{"type":"step","index":{step.index},"kind":"{step.kind.value}",'
            f'"counts":{self._dumps(step.counts())},"meta":{self._dumps(step.meta)},'
            f'"events":[{events}]}}'
        )

    def _event_json(self, event: SyncEvent) -> str:
        key = (event.kind, event.api, event.site, event.detail)
        static = self._fragments.get(key)
        if static is None:
            if len(self._fragments) >= self._MAX_FRAGMENTS:
                self._fragments.clear()
            data = event.to_json()
            for varying in ("step", "step_kind", "blocked_s"):
                del data[varying]
            static = self._fragments[key] = self._dumps(data)[:-1]
        step = "null" if event.step is None else str(event.step)
        return (
            f'{static},"step":{step},"step_kind":"{event.step_kind.value}",'
            f'"blocked_s":{float(event.blocked_s)!r}}}'
        )


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
            self.journal = ProcessJournal(
                str(directory / f"{role}-{os.getpid()}.jsonl"),
                {
                    "format": JOURNAL_FORMAT,
                    "role": role,
                    "pid": os.getpid(),
                    "ppid": os.getppid(),
                    "process_name": multiprocessing.current_process().name,
                    "device": device,
                    "mutant": self.mutant,
                    "versions": versions(),
                    "started": time.time(),
                },
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
        step.events.clear()
        self.ledger.outside.clear()  # load/warm-up/between-step waits: not judged, not kept

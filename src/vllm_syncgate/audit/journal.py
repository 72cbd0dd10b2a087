"""The audit journal: where a ``vllm serve`` process records its steps, and how they are read back.

Every process the plugin arms writes ``<role>-<pid>.jsonl`` into ``SYNCGATE_AUDIT_DIR``: a
``header`` record (format version, role, pid, device, versions), for a worker a second header once
its model runner exists (runner ``v1``/``v2``, speculation on/off; later fields override earlier
ones), then one ``step`` record per runner step. Each line is flushed as it is written, because
vLLM kills its EngineCore and workers at shutdown.

One rule for a torn line, for whole reads and the cursor alike: a line counts once its newline is
written. Bytes after the last newline are a line still being written, or one cut off by a kill,
and are not read; a complete line that is not a journal record is an error. A journal written in
another format version is refused rather than misread.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_syncgate.audit.events import SyncEvent
from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.errors import AuditDirError, JournalFormatError

ENV_AUDIT_DIR = "SYNCGATE_AUDIT_DIR"
#: Set by ``syncgate check --mutant`` in its servers' environment only (never read from the
#: caller's: a leftover in a shell changes no verdict); see :mod:`vllm_syncgate.audit.mutants`.
ENV_MUTANT = "SYNCGATE_MUTANT"
FORMAT = 1
SUFFIX = ".jsonl"
ROLES = ("api", "engine", "worker")


def journal_name(role: str, pid: int) -> str:
    """The file one process journals into: several processes share one directory."""
    return f"{role}-{pid}{SUFFIX}"


def journal_paths(directory: Path) -> list[Path]:
    """The journals in ``directory``, which must exist and hold at least one."""
    if not directory.is_dir():
        raise AuditDirError(f"{directory}: audit directory does not exist")
    paths = sorted(directory.glob(f"*{SUFFIX}"))
    if not paths:
        raise AuditDirError(
            f"{directory}: no journals (was the server started with {ENV_AUDIT_DIR} set "
            "and syncgate installed in its environment?)"
        )
    return paths


def clear_journals(directory: Path) -> None:
    """Remove a previous run's journals: every journal in a directory is read as one run."""
    for stale in directory.glob(f"*{SUFFIX}"):
        stale.unlink()


class JournalWriter:
    """Appends header and step records to one process's journal, each flushed at once.

    It runs once per step inside the decode loop, so lines are compact and unsorted, and the
    parts of an event that repeat every step (kind, API, call site) are serialised once and
    reused; a step line parses to exactly ``{"type": "step", **step.to_json()}``.
    """

    _SEPARATORS = (",", ":")
    _MAX_FRAGMENTS = 1024

    def __init__(self, path: Path, **header: Any) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fragments: dict[tuple[Any, ...], str] = {}
        self._fh = path.open("a", encoding="utf-8")
        self.write_header(format=FORMAT, **header)

    def write_header(self, **fields: Any) -> None:
        self._write_line(self._dumps({"type": "header", **fields}))

    def __call__(self, step: Step) -> None:
        events = ",".join(self._event_json(e) for e in step.events)
        self._write_line(
            f'{{"type":"step","index":{step.index},"kind":"{step.kind.value}",'
            f'"counts":{self._dumps(step.counts())},"meta":{self._dumps(step.meta)},'
            f'"events":[{events}]}}'
        )

    def close(self) -> None:
        with self._lock:
            self._fh.close()

    def _dumps(self, obj: Any) -> str:
        return json.dumps(obj, separators=self._SEPARATORS)

    def _write_line(self, line: str) -> None:
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

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


@dataclass
class AuditProcess:
    """One process's journal: merged header fields and the runner steps read from it."""

    path: Path
    header: dict[str, Any] = field(default_factory=dict)
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


class _FileReader:
    """Reads one journal from where it last stopped; only complete lines are consumed."""

    def __init__(self, path: Path) -> None:
        self.process = AuditProcess(path)
        self._offset = 0
        self._line = 0

    def read_new(self) -> list[Step]:
        path = self.process.path
        try:
            with path.open("rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except OSError as exc:
            raise AuditDirError(f"{path}: cannot be read ({exc.strerror})") from None
        complete = data.rfind(b"\n") + 1
        self.process.torn = complete < len(data)
        self._offset += complete
        steps: list[Step] = []
        for raw in data[:complete].split(b"\n")[:-1]:
            self._line += 1
            if raw.strip():
                step = self._record(raw)
                if step is not None:
                    steps.append(step)
        return steps

    def require_header(self, empty_ok: bool) -> None:
        """A journal starts with its header; only a file not yet written may lack it."""
        if not self.process.header and not (empty_ok and self._line == 0):
            raise AuditDirError(
                f"{self.process.path}: has no header record (not a syncgate journal)"
            )

    def _record(self, raw: bytes) -> Step | None:
        where = f"{self.process.path}:{self._line}"
        try:
            record = json.loads(raw)
            kind = record["type"]
            if kind == "step":
                return Step.from_json(record)
            if kind != "header":
                return None
            fields = {k: v for k, v in record.items() if k != "type"}
        except UnicodeDecodeError:
            raise AuditDirError(f"{where}: is not UTF-8 text") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise AuditDirError(f"{where}: not a syncgate journal record ({exc})") from None
        if not self.process.header and fields.get("format") != FORMAT:
            raise JournalFormatError(
                f"{self.process.path}: journal format {fields.get('format')}, "
                f"this syncgate reads format {FORMAT}"
            )
        self.process.header.update(fields)
        return None


def _order(process: AuditProcess) -> tuple[int, int]:
    return (ROLES.index(process.role) if process.role in ROLES else len(ROLES), process.pid)


def read_journal(path: Path) -> AuditProcess:
    """One whole journal; a torn last line is dropped and flagged in ``torn``."""
    reader = _FileReader(path)
    reader.process.steps = reader.read_new()
    reader.require_header(empty_ok=False)
    return reader.process


def read_journals(directory: Path) -> list[AuditProcess]:
    """Every journal of one server run: api, engine, then workers, each by pid."""
    return sorted((read_journal(p) for p in journal_paths(directory)), key=_order)


class WorkerHeaders:
    """What a run's worker headers say: one runner, speculation mode and device for all ranks."""

    directory: Path
    processes: list[AuditProcess]

    @property
    def runner(self) -> str:
        return str(self._worker_field("runner"))

    @property
    def speculation(self) -> bool:
        return bool(self._worker_field("speculation"))

    @property
    def device(self) -> str:
        return str(self._worker_field("device"))

    def _worker_field(self, name: str) -> Any:
        values = {getattr(p, name) for p in self.processes if p.role == "worker"} - {None}
        if not values:
            raise AuditDirError(
                f"{self.directory}: no worker journal says which {name} ran "
                f"(did the plugin load in the worker? is {ENV_AUDIT_DIR} shared?)"
            )
        if len(values) > 1:
            raise AuditDirError(f"{self.directory}: workers disagree on {name}: {sorted(values)}")
        return values.pop()


class JournalCursor(WorkerHeaders):
    """Reads a live audit directory by offset: each call returns only the steps journaled since.

    A server run's journals grow while it serves; reading them whole after every scenario would
    cost time quadratic in the run's length. Headers are kept in ``processes`` (every journal
    read so far, without steps), steps are handed out once.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.processes: list[AuditProcess] = []
        self._readers: dict[Path, _FileReader] = {}

    def new_steps(self) -> list[Step]:
        """Steps the workers journaled since the last call, worker by worker in pid order."""
        fresh: list[tuple[AuditProcess, list[Step]]] = []
        for path in journal_paths(self.directory):
            reader = self._readers.get(path)
            if reader is None:
                reader = self._readers[path] = _FileReader(path)
            fresh.append((reader.process, reader.read_new()))
            reader.require_header(empty_ok=True)
        fresh.sort(key=lambda pair: _order(pair[0]))
        self.processes = [process for process, _ in fresh]
        return [s for process, steps in fresh if process.role == "worker" for s in steps]

__all__ = [
    "ENV_AUDIT_DIR",
    "FORMAT",
    "AuditProcess",
    "JournalCursor",
    "JournalWriter",
    "WorkerHeaders",
    "clear_journals",
    "journal_name",
    "journal_paths",
    "read_journal",
    "read_journals",
]

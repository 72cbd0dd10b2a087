"""journal.py: the writer's lines, the format version, the torn-line rule, the cursor, memory."""

import gc
import json
import weakref

import pytest

from vllm_syncgate.audit.backends.session import LiveAudit
from vllm_syncgate.audit.collect import load_audit_dir
from vllm_syncgate.audit.events import CallSite, StepKind, SyncEvent, SyncKind
from vllm_syncgate.audit.journal import (
    FORMAT,
    JournalCursor,
    JournalWriter,
    journal_name,
    read_journal,
)
from vllm_syncgate.audit.ledger import Ledger, Step
from vllm_syncgate.errors import AuditDirError, JournalFormatError

SITE = CallSite("runner.py", 10, "step", "pkg.runner", "Runner.step")


def _write_steps(journal, first, count):
    """``count`` decode steps numbered from ``first``, one event each."""
    for index in range(first, first + count):
        event = SyncEvent(SyncKind.EVENT_SYNC, "Event.synchronize", SITE, index, StepKind.DECODE)
        journal(Step(index, StepKind.DECODE, [event]))


def _worker(directory, pid, steps=0, **header):
    journal = JournalWriter(directory / journal_name("worker", pid), role="worker", pid=pid,
                            device="cpu")
    journal.write_header(runner="v1", speculation=False, **header)
    _write_steps(journal, 0, steps)
    return journal


def test_journal_lines_parse_to_the_step_json(tmp_path):
    journal = JournalWriter(tmp_path / "j.jsonl", role="worker")
    ledger = Ledger(on_step_end=journal)
    site = CallSite('a "quoted" file.py', 3, "f", "m", "C.f")
    expected = []
    for i in range(3):
        with ledger.step(StepKind.DECODE if i else StepKind.PREFILL, n=i) as step:
            ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=site, blocked_s=i / 3)
            ledger.record(SyncKind.BLOCKING_READBACK, "x", site=site, detail="ünï\n")
        expected.append({"type": "step", **step.to_json()})
    journal.close()
    lines = (tmp_path / "j.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines[1:]] == expected
    assert json.loads(lines[0]) == {"type": "header", "format": FORMAT, "role": "worker"}


def test_journal_round_trip_ignores_a_torn_last_line(tmp_path):
    path = tmp_path / "worker-1.jsonl"
    journal = JournalWriter(path, role="worker", pid=1)
    ledger = Ledger(on_step_end=journal)
    with ledger.step(StepKind.DECODE):
        ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=SITE, blocked_s=0.5)
    journal.close()
    with open(path, "a") as fh:
        fh.write('{"type": "step", "index": 1, "ki')  # the process was killed mid-write
    process = read_journal(path)
    header, steps = process.header, process.steps
    assert header["role"] == "worker"
    assert len(steps) == 1
    assert steps[0].events[0].site == SITE
    assert steps[0].events[0].blocked_s == 0.5
    assert process.torn


def test_a_torn_multibyte_character_is_a_torn_line_not_bad_text(tmp_path):
    journal = _worker(tmp_path, 1, steps=2)
    journal.close()
    with (tmp_path / "worker-1.jsonl").open("ab") as fh:
        fh.write('{"type":"step","meta":{"x":"ü'.encode()[:-1])  # cut inside the 'ü'
    assert len(read_journal(tmp_path / "worker-1.jsonl").steps) == 2


def test_a_complete_last_line_that_is_not_a_record_is_an_error(tmp_path):
    """One rule: only the bytes after the last newline can be torn."""
    _worker(tmp_path, 1, steps=2).close()
    with (tmp_path / "worker-1.jsonl").open("a") as fh:
        fh.write('{"type": "step", "index": 2, "ki\n')
    with pytest.raises(AuditDirError, match=r"worker-1.jsonl:5: not a syncgate journal record"):
        read_journal(tmp_path / "worker-1.jsonl")


@pytest.mark.parametrize("found", [FORMAT + 1, None])
def test_another_format_version_is_refused_naming_file_and_both_versions(tmp_path, found):
    header = {"type": "header", "format": found, "role": "worker", "pid": 1}
    path = tmp_path / "worker-1.jsonl"
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(JournalFormatError) as caught:
        load_audit_dir(tmp_path)
    message = str(caught.value)
    assert message == f"{path}: journal format {found}, this syncgate reads format {FORMAT}"
    assert "\n" not in message
    with pytest.raises(JournalFormatError):
        JournalCursor(tmp_path).new_steps()


def test_cursor_reads_only_new_complete_lines_across_appends(tmp_path):
    cursor = JournalCursor(tmp_path)
    first = _worker(tmp_path, 300, steps=2)
    JournalWriter(tmp_path / journal_name("api", 100), role="api", pid=100).close()
    assert [s.index for s in cursor.new_steps()] == [0, 1]
    assert (cursor.runner, cursor.speculation) == ("v1", False)
    assert cursor.new_steps() == []

    path = tmp_path / journal_name("worker", 300)
    with path.open("a") as fh:  # a step line half written when the cursor looks
        fh.write('{"type":"step","index":2,"kind":"decode",')
    assert cursor.new_steps() == []
    with path.open("a") as fh:
        fh.write('"counts":{},"meta":{},"events":[]}\n')
    _write_steps(first, 3, 1)
    assert [s.index for s in cursor.new_steps()] == [2, 3]

    second = _worker(tmp_path, 200, steps=1)  # a worker whose journal appears later
    _write_steps(first, 4, 1)
    assert [(s.index, s.kind) for s in cursor.new_steps()] == [
        (0, StepKind.DECODE), (4, StepKind.DECODE)
    ]
    assert [p.pid for p in cursor.processes] == [100, 200, 300]
    first.close()
    second.close()
    assert len(load_audit_dir(tmp_path).steps) == 6, "the cursor read what a whole read reads"


def test_cursor_tolerates_a_journal_not_yet_written_but_not_a_headerless_one(tmp_path):
    _worker(tmp_path, 1).close()
    empty = tmp_path / journal_name("worker", 2)
    empty.write_bytes(b"")
    cursor = JournalCursor(tmp_path)
    assert cursor.new_steps() == []
    empty.write_text('{"type":"note"}\n')
    with pytest.raises(AuditDirError, match=r"worker-2\.jsonl: has no header record"):
        cursor.new_steps()


def test_cursor_keeps_the_directory_errors(tmp_path):
    with pytest.raises(AuditDirError, match="no journals"):
        JournalCursor(tmp_path).new_steps()
    with pytest.raises(AuditDirError, match="does not exist"):
        JournalCursor(tmp_path / "missing").new_steps()
    JournalWriter(tmp_path / journal_name("api", 1), role="api", pid=1).close()
    cursor = JournalCursor(tmp_path)
    cursor.new_steps()
    with pytest.raises(AuditDirError, match="no worker journal says which runner"):
        _ = cursor.runner


def test_ledger_with_a_sink_keeps_no_finished_step():
    alive, indices = [], []

    def sink(step):
        alive.append(weakref.ref(step))
        indices.append(step.index)

    ledger = Ledger(on_step_end=sink)
    for _ in range(1000):
        with ledger.step(StepKind.DECODE):
            ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=SITE)
    gc.collect()
    assert indices == list(range(1000)), "steps are still numbered"
    assert ledger.steps == []
    assert sum(r() is not None for r in alive) <= 1


def test_live_audit_memory_stays_bounded_over_many_steps(tmp_path):
    audit = LiveAudit(tmp_path, "cpu")
    alive = []
    try:
        for _ in range(2000):
            audit.ledger.record(SyncKind.EVENT_SYNC, "between steps", site=SITE)
            with audit.ledger.step(StepKind.DECODE) as step:
                audit.ledger.record(SyncKind.BLOCKING_READBACK, "Tensor.tolist", site=SITE)
            alive.append(weakref.ref(step))
        del step
    finally:
        audit.stop()
    gc.collect()
    assert len(audit.ledger.steps) + len(audit.ledger.outside) == 0
    assert sum(r() is not None for r in alive) <= 1
    assert len(load_audit_dir(tmp_path).processes[0].steps) == 2000, "the journal has them all"

"""Format detection and streaming parsers for CI logs.

Logs are read line by line and never held in memory whole: a GitHub job log of a long e2e run is
tens of megabytes. Every text format (raw GitHub job log, ``gh run view --log[-failed]``, the
per-job files of a run-log zip, plain pytest output, vllm-ascend's per-file runner) goes through
one :class:`TextScanner` after the transport's decorations (timestamps, ``job<TAB>step<TAB>``
prefixes, ANSI colours, ``##[group]`` markers, CRLF) are stripped. Nothing read here is executed.

Every read is bounded (:class:`LogLimits`): a log is a regular file (never a FIFO or device),
at most ``max_bytes`` are read from it after decompression (a zip member that inflates without
end is an error, not minutes of work), and a line longer than ``max_line`` characters is cut
there, so a log without newlines costs one line's worth of memory, not the file's.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import zipfile
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from vllm_syncgate.environment import HEADER_PREFIX, parse_header
from vllm_syncgate.errors import LogParseError
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome
from vllm_syncgate.safeio import json_loads, open_regular

#: How many tests run before a failure on the same worker are remembered for order replay.
DEFAULT_PREDECESSORS = 50

_HEAD_BYTES = 64 * 1024
_TIMESTAMP = re.compile(r"^\ufeff?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?")
# Anchored on a literal newline (not ^ with re.M) so the regex engine can skip ahead fast.
_TIMESTAMPS = re.compile(r"\n\ufeff?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?")
_CHUNK_CHARS = 1 << 20
_ANSI = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|[()][0-9A-Za-z])")
_GH_MARKER = re.compile(r"^(?:##\[(\w+)\]|::(\w+)(?: [^:]*)?::)")
_OUTCOMES = "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS"
_OUTCOME_WORDS = frozenset(_OUTCOMES.split("|"))
_VERBOSE_LINE = re.compile(
    rf"^(?P<nodeid>[^\s:][^:]*?\.py::.*?) (?P<outcome>{_OUTCOMES})(?:\s+\[\s*\d+%\])?\s*$"
)
_VERBOSE_START = re.compile(r"^[^\s:][^:]*?\.py::\S")
_LONE_OUTCOME = re.compile(rf"(?:^|\S)({_OUTCOMES})(?:\s+\[\s*\d+%\])?\s*$")
_SUMMARY_HEADER = re.compile(r"^=+ short test summary info =+$")
_SUMMARY_LINE = re.compile(r"^(FAILED|ERROR) (\S.*)$")
_COLLECTING = re.compile(r"^_+ ERROR collecting (\S.*?) _+$")
_COUNTS = re.compile(
    r"^=*\s*((?:\d+ (?:failed|passed|skipped|deselected|xfailed|xpassed|errors?|warnings?|rerun)"
    r"(?:, )?)+|no tests ran) in [\d.]+s(?: \([^)]*\))?\s*=*$"
)
_COUNT_ITEM = re.compile(r"(\d+) (\w+)")
_SEED = re.compile(r"--randomly-seed=(\d+)")
_SUITE_START = re.compile(r"^\[(\d+)/(\d+)\]\s+START\s+(\S.*?)\s*$")
_SUITE_END = re.compile(
    r"^\[(\d+)/(\d+)\]\s+(PASSED|FAILED)(?:\s+\(exit code (-?\d+)\))?\s+(\S.*?)"
    r"(?:\s+\((\d+(?:\.\d+)?)s\))?\s*$"
)
_GH_TAB = re.compile(r"^([^\t]*)\t([^\t]*)\t(.*)$")


@dataclass(frozen=True)
class LogLimits:
    """How much of a log is read: bytes after decompression, and characters per line."""

    max_bytes: int = 2 << 30
    max_line: int = 1 << 20


class _Capped(io.RawIOBase):
    """A binary stream that raises :class:`LogParseError` once ``budget`` bytes were read."""

    def __init__(self, stream: IO[bytes], budget: list[int], source: object) -> None:
        self._stream, self._budget, self._source = stream, budget, source

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = self._stream.readinto(buffer)  # type: ignore[attr-defined]
        self._budget[0] -= n or 0
        if self._budget[0] < 0:
            raise LogParseError(f"{self._source}: more than {self._budget[1]} bytes of log "
                                "(after decompression); raise --max-log-bytes to read it")
        return n


def split_nodeid(text: str, separator: str = " - ") -> str:
    """The node id at the start of ``text``: up to the first ``separator`` outside brackets.

    Summary lines are ``FAILED <nodeid> - <message>`` and ``-sv`` lines are ``<nodeid> <print
    output>``; parametrize ids may themselves contain `` - `` or spaces inside ``[...]``, so a
    plain split would cut them.
    """
    depth = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(separator, i):
            return text[:i]
    return text.rstrip()


def clean_line(line: str) -> str:
    """Strip CR/LF, a leading timestamp and ANSI colour codes from one log line.

    Hot path (every line of a 50 MB log): plain string tests first, the regex only on a hit.
    """
    line = line.rstrip("\r\n")
    if line[:1] == "\ufeff":
        line = line[1:]
    if len(line) > 19 and line[10] == "T" and line[4] == "-":
        m = _TIMESTAMP.match(line)
        if m:
            line = line[m.end():]
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    return line


class TextScanner:
    """Streaming state machine over cleaned lines of one job's pytest output."""

    def __init__(self, log: CiLog, job: str = "", predecessors: int = DEFAULT_PREDECESSORS):
        self.log = log
        self.job = job
        self._recent: dict[str, deque[str]] = {}
        self._keep = predecessors
        self._found: dict[str, CiFailure] = {}
        self._pending: str | None = None
        self._suite_file: str | None = None
        self._suite_file_failures = 0
        self._in_summary = False
        self.saw_end = False
        self.saw_tests = False

    # -- helpers ---------------------------------------------------------------------------
    def _ran(self, worker: str, nodeid: str, outcome: str) -> None:
        self.saw_tests = True
        self.log.tests_seen += 1
        if outcome == "FAILED" or outcome == "ERROR":
            self._fail(nodeid, CiOutcome.FAILED if outcome == "FAILED" else CiOutcome.ERROR, worker)
        recent = self._recent.get(worker)
        if recent is None:
            recent = self._recent[worker] = deque(maxlen=self._keep)
        recent.append(nodeid)

    def _fail(self, nodeid: str, outcome: CiOutcome, worker: str = "main",
              detail: str = "") -> None:
        if self._suite_file is not None and outcome is not CiOutcome.COLLECTION_ERROR:
            self._suite_file_failures += 1
        known = self._found.get(nodeid)
        if known is not None:
            # A setup error reported after a call failure (or vice versa) keeps the first kind;
            # a later summary line may add a worker-less duplicate, which adds nothing.
            return
        predecessors = tuple(self._recent.get(worker, ()))
        failure = CiFailure(nodeid, outcome, self.job, worker, predecessors, detail)
        self._found[nodeid] = failure
        self.log.failures.append(failure)

    # -- the machine -----------------------------------------------------------------------
    def feed(self, line: str) -> None:
        """Consume one cleaned line."""
        if not line:
            return
        if line[0] in "#:":
            marker = _GH_MARKER.match(line)
            if marker:
                kind = marker.group(1) or marker.group(2)
                line = line[marker.end():]
                if kind == "error" and len(self.log.annotations) < 100:
                    self.log.annotations.append(line.strip())
                if not line:
                    return
        if HEADER_PREFIX in line:  # cheap test before the JSON parse
            env = parse_header(line)
            if env is not None:
                self.log.env = env
                seed = env.get("seed")
                if isinstance(seed, int) and self.log.seed is None:
                    self.log.seed = seed
            return
        if "--randomly-seed=" in line:
            seed = _SEED.search(line)
            if seed:
                self.log.seed = int(seed.group(1))
        first = line[0]
        if first == "[":
            if line.startswith("[gw"):
                if self._xdist(line):
                    return
            elif self._suite(line):
                return
        elif first in "=_":
            self._banner(line)
            return
        elif first in "FE":
            m = _SUMMARY_LINE.match(line)
            if m and self._summary(m.group(1), m.group(2)):
                return
        if ".py::" in line:
            m = _VERBOSE_LINE.match(line)
            if m:
                self._pending = None
                self._ran("main", m.group("nodeid"), m.group("outcome"))
                return
            if _VERBOSE_START.match(line):
                self._pending = split_nodeid(line, " ")
                return
        if self._pending is not None:
            m = _LONE_OUTCOME.search(line)
            if m:
                nodeid, self._pending = self._pending, None
                self._ran("main", nodeid, m.group(1))
                return
        if " in " in line and _COUNTS.match(line):
            self._counts(line)

    def _xdist(self, line: str) -> bool:
        """``[gw0] [ 50%] PASSED path::id`` by slicing: the commonest line of a big log."""
        close = line.find("] [", 3)
        percent = line.find("%] ", close)
        if close < 0 or percent < 0:
            return False
        outcome, _, nodeid = line[percent + 3:].partition(" ")
        if outcome not in _OUTCOME_WORDS or "::" not in nodeid:
            return False
        self._ran(line[1:close], nodeid.rstrip(), outcome)
        return True

    def _banner(self, line: str) -> None:
        if _SUMMARY_HEADER.match(line):
            self._in_summary = True
            return
        m = _COLLECTING.match(line)
        if m:
            self._fail(m.group(1), CiOutcome.COLLECTION_ERROR, detail="error collecting")
            return
        if " in " in line and _COUNTS.match(line):
            self._counts(line)

    def _counts(self, line: str) -> None:
        m = _COUNTS.match(line)
        assert m is not None
        counts: dict[str, int] = {}
        for number, word in _COUNT_ITEM.findall(m.group(1)):
            word = {"error": "errors", "warning": "warnings"}.get(word, word)
            counts[word] = counts.get(word, 0) + int(number)
        for key, value in counts.items():
            self.log.counts[key] = self.log.counts.get(key, 0) + value
        self.saw_end = True
        self._in_summary = False
        self._pending = None

    def _summary(self, kind: str, rest: str) -> bool:
        nodeid = split_nodeid(rest)
        path = nodeid.split("::", 1)[0]
        if not path.endswith(".py") and not self._in_summary:
            return False
        if "::" not in nodeid:
            if kind == "ERROR":
                self._fail(nodeid, CiOutcome.COLLECTION_ERROR, detail=_message(rest, nodeid))
                return True
            if not self._in_summary:
                return False
        self._fail(nodeid, CiOutcome.FAILED if kind == "FAILED" else CiOutcome.ERROR,
                   detail=_message(rest, nodeid))
        return True

    def _suite(self, line: str) -> bool:
        m = _SUITE_START.match(line)
        if m:
            # Each file runs in its own pytest process: nothing before it shares its state.
            self._suite_file = m.group(3)
            self._suite_file_failures = 0
            self._recent.clear()
            self.saw_tests = True
            return True
        m = _SUITE_END.match(line)
        if not m:
            return False
        path, status, code = m.group(5), m.group(3), m.group(4)
        if status == "FAILED" and self._suite_file_failures == 0:
            # The file failed but no test inside it was reported (crash, timeout, collection):
            # the whole file is the unit to rerun.
            outcome = CiOutcome.COLLECTION_ERROR if code in ("2", "4") else CiOutcome.FAILED
            self._fail(path, outcome, detail=f"file exited with code {code}")
        self._suite_file = None
        self.saw_end = True
        return True

    def finish(self) -> None:
        """Flag the log truncated when tests started but no end-of-run line was ever seen."""
        if self.saw_tests and not self.saw_end:
            self.log.truncated = True


def _message(rest: str, nodeid: str) -> str:
    return rest[len(nodeid) + 3:].strip() if len(rest) > len(nodeid) else ""


def _text(stream: IO[bytes], budget: list[int], source: object) -> io.TextIOWrapper:
    capped = io.BufferedReader(_Capped(stream, budget, source), 1 << 16)
    return io.TextIOWrapper(capped, encoding="utf-8", errors="replace", newline="")


def clean_lines(reader: io.TextIOBase, max_line: int = LogLimits.max_line) -> Iterator[str]:
    """Cleaned lines of a raw job log, read and cleaned a megabyte at a time.

    Timestamps, ANSI codes and CRs are removed by one C-level regex pass per chunk rather than
    per line, which is what keeps a 50 MB log within seconds. A line is cut at ``max_line``
    characters and the rest of it skipped, so memory stays bounded without newlines.
    """
    tail = ""
    skipping = False  # inside the cut-off rest of an over-long line
    while True:
        chunk = reader.read(_CHUNK_CHARS)
        if not chunk:
            break
        if skipping:
            cut = chunk.find("\n")
            if cut < 0:
                continue
            chunk, skipping = chunk[cut + 1:], False
        chunk = tail + chunk
        cut = chunk.rfind("\n")
        if cut < 0:
            tail = chunk
            if len(tail) > max_line:
                yield from _clean_block(tail[:max_line], max_line)
                tail, skipping = "", True
            continue
        chunk, tail = chunk[:cut], chunk[cut + 1:]
        yield from _clean_block(chunk, max_line)
    if tail:
        yield from _clean_block(tail[:max_line], max_line)


def _clean_block(block: str, max_line: int) -> list[str]:
    if "\r" in block:
        block = block.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in block:
        block = _ANSI.sub("", block)
    lines = _TIMESTAMPS.sub("\n", "\n" + block).split("\n")[1:]
    if max_line < _CHUNK_CHARS:
        return [line[:max_line] for line in lines]
    return lines


def scan_text(reader: io.TextIOBase, log: CiLog, job: str = "",
              max_line: int = LogLimits.max_line) -> None:
    """Run one job's raw log (any decoration) through a fresh scanner."""
    scanner = TextScanner(log, job)
    feed = scanner.feed
    for line in clean_lines(reader, max_line):
        feed(line)
    scanner.finish()


def _bounded_lines(reader: io.TextIOBase, max_line: int) -> Iterator[str]:
    """Raw lines (newline kept) of at most ``max_line`` characters; the rest of a longer one
    is skipped."""
    while True:
        line = reader.readline(max_line)
        if not line:
            return
        yield line
        while not line.endswith("\n") and line:
            line = reader.readline(max_line)


def scan_gh(lines: Iterable[str], log: CiLog) -> None:
    """``gh run view --log``: ``job<TAB>step<TAB>timestamp line``; one scanner per job."""
    scanners: dict[str, TextScanner] = {}
    for raw in lines:
        m = _GH_TAB.match(raw.rstrip("\r\n"))
        if m is None:
            continue
        job = m.group(1)
        scanner = scanners.get(job)
        if scanner is None:
            scanner = scanners[job] = TextScanner(log, job)
        scanner.feed(clean_line(m.group(3)))
    for scanner in scanners.values():
        scanner.finish()


def _zip_jobs(archive: zipfile.ZipFile) -> list[tuple[str, zipfile.ZipInfo]]:
    """Top-level per-job files; of the ``N_job.txt`` / ``-2147483648_job.txt`` twins, the fuller."""
    best: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        if info.is_dir() or "/" in info.filename or not info.filename.endswith(".txt"):
            continue
        job = re.sub(r"^-?\d+_", "", info.filename[: -len(".txt")])
        if job not in best or info.file_size > best[job].file_size:
            best[job] = info
    return sorted(best.items(), key=lambda kv: kv[1].filename)


def scan_zip(path: Path, log: CiLog, limits: LogLimits = LogLimits()) -> None:
    """A GitHub run-log zip: each top-level ``<n>_<job>.txt`` is one raw job log."""
    budget = [limits.max_bytes, limits.max_bytes]  # left, total: shared by all members
    try:
        with zipfile.ZipFile(path) as archive:
            jobs = _zip_jobs(archive)
            if not jobs:
                raise LogParseError(f"{path}: zip archive holds no per-job .txt log")
            for job, info in jobs:
                with archive.open(info) as member:
                    scan_text(_text(member, budget, path), log, job, limits.max_line)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise LogParseError(f"{path}: damaged zip archive or one syncgate cannot read ({exc})") from exc


def scan_reportlog(lines: Iterable[str], log: CiLog, source: str) -> None:
    """pytest-reportlog JSONL: exact node ids, phases, and the worker each test ran on."""
    recent: dict[str, deque[str]] = {}
    found: set[str] = set()
    ended = False
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json_loads(raw)
        except ValueError:
            log.truncated = True  # a half-written last record is the usual cause
            continue
        if not isinstance(record, dict):
            raise LogParseError(f"{source}: line {number}: not a JSON object")
        kind = record.get("$report_type")
        if kind == "SessionFinish":
            ended = True
        elif kind == "CollectReport" and record.get("outcome") == "failed":
            nodeid = str(record.get("nodeid", ""))
            if nodeid and nodeid not in found:
                found.add(nodeid)
                log.failures.append(CiFailure(nodeid, CiOutcome.COLLECTION_ERROR,
                                              detail="error collecting"))
        elif kind == "TestReport":
            nodeid = str(record.get("nodeid", ""))
            worker = str(record.get("worker_id") or "main")
            when = record.get("when")
            queue = recent.setdefault(worker, deque(maxlen=DEFAULT_PREDECESSORS))
            if when == "setup":
                log.tests_seen += 1
            if record.get("outcome") == "failed" and nodeid not in found:
                found.add(nodeid)
                outcome = CiOutcome.FAILED if when == "call" else CiOutcome.ERROR
                log.failures.append(CiFailure(nodeid, outcome, "", worker, tuple(queue),
                                              f"failed in {when}"))
            if when == "teardown" and (not queue or queue[-1] != nodeid):
                queue.append(nodeid)
    if log.tests_seen and not ended:
        log.truncated = True


def detect_format(head: bytes, path: Path) -> str:
    """Name the format of a log from its first bytes (and, for JUnit, its opening tag)."""
    if not head:
        raise LogParseError(f"{path}: empty file")
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if b"\x00" in head:
        raise LogParseError(f"{path}: binary file, not a CI log")
    text = codecs.decode(head, "utf-8", errors="replace")
    if text.count("\ufffd") > max(8, len(text) // 20):
        raise LogParseError(f"{path}: binary file, not a CI log (not UTF-8 text)")
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("<"):
        return "junit"
    first = stripped.split("\n", 1)[0]
    if first.startswith("{") and '"$report_type"' in first:
        return "reportlog"
    if _GH_TAB.match(first.rstrip("\r")) and _TIMESTAMP.match(first.split("\t", 2)[2]):
        return "gh"
    if _TIMESTAMP.match(first):
        return "github"
    return "pytest"


def parse_log(path: str | Path, limits: LogLimits = LogLimits()) -> CiLog:
    """Parse any supported CI log file into a :class:`CiLog` (streaming, bounded).

    One rule for a log without failures: if it shows pytest ran (an outcome, a count line, a
    seed, an env header, or a JUnit/reportlog structure) it is a clean run, otherwise it is not a
    test log at all and a :class:`LogParseError`, like an empty file.
    """
    path = Path(path)
    try:
        with open_regular(path) as handle:
            head = handle.read(_HEAD_BYTES)
            size = os.fstat(handle.fileno()).st_size
    except IsADirectoryError as exc:
        raise LogParseError(f"{path}: is a directory, not a log file") from exc
    except OSError as exc:
        raise LogParseError(f"{path}: cannot read ({exc.strerror})") from exc
    fmt = detect_format(head, path)
    log = CiLog(source=str(path), format=fmt)
    if fmt == "zip":
        scan_zip(path, log, limits)
    elif fmt == "junit":
        from vllm_syncgate.repro.junit import scan_junit

        if size > limits.max_bytes:
            raise LogParseError(f"{path}: more than {limits.max_bytes} bytes of log; raise "
                                "--max-log-bytes to read it")
        scan_junit(path, log)
    else:
        with open_regular(path) as handle:
            reader = _text(handle, [limits.max_bytes, limits.max_bytes], path)
            if fmt == "reportlog":
                scan_reportlog(_bounded_lines(reader, limits.max_line), log, str(path))
            elif fmt == "gh":
                scan_gh(_bounded_lines(reader, limits.max_line), log)
            else:
                scan_text(reader, log, max_line=limits.max_line)
    if not (log.failures or log.tests_seen or log.counts or log.seed is not None
            or log.env is not None or fmt in ("junit", "reportlog")):
        raise LogParseError(f"{path}: no pytest output found (no test outcome, summary or "
                            "count line): not a CI test log")
    return log

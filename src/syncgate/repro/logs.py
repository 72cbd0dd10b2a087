"""Format detection and streaming parsers for CI logs.

Logs are read line by line and never held in memory whole: a GitHub job log of a long e2e run is
tens of megabytes. Every text format (raw GitHub job log, ``gh run view --log[-failed]``, the
per-job files of a run-log zip, plain pytest output, vllm-ascend's per-file runner) goes through
one :class:`TextScanner` after the transport's decorations (timestamps, ``job<TAB>step<TAB>``
prefixes, ANSI colours, ``##[group]`` markers, CRLF) are stripped. Nothing read here is executed.
"""

from __future__ import annotations

import codecs
import io
import json
import re
import zipfile
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from syncgate.environment import HEADER_PREFIX, parse_header
from syncgate.errors import LogParseError
from syncgate.repro.model import CiFailure, CiLog, CiOutcome

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


def _text(stream: IO[bytes]) -> io.TextIOWrapper:
    return io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="")


def clean_lines(reader: io.TextIOBase) -> Iterator[str]:
    """Cleaned lines of a raw job log, read and cleaned a megabyte at a time.

    Timestamps, ANSI codes and CRs are removed by one C-level regex pass per chunk rather than
    per line, which is what keeps a 50 MB log within seconds.
    """
    tail = ""
    while True:
        chunk = reader.read(_CHUNK_CHARS)
        if not chunk:
            break
        chunk = tail + chunk
        cut = chunk.rfind("\n")
        if cut < 0:
            tail = chunk
            continue
        chunk, tail = chunk[:cut], chunk[cut + 1:]
        yield from _clean_block(chunk)
    if tail:
        yield from _clean_block(tail)


def _clean_block(block: str) -> list[str]:
    if "\r" in block:
        block = block.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in block:
        block = _ANSI.sub("", block)
    return _TIMESTAMPS.sub("\n", "\n" + block).split("\n")[1:]


def scan_text(reader: io.TextIOBase, log: CiLog, job: str = "") -> None:
    """Run one job's raw log (any decoration) through a fresh scanner."""
    scanner = TextScanner(log, job)
    feed = scanner.feed
    for line in clean_lines(reader):
        feed(line)
    scanner.finish()


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


def scan_zip(path: Path, log: CiLog) -> None:
    """A GitHub run-log zip: each top-level ``<n>_<job>.txt`` is one raw job log."""
    try:
        with zipfile.ZipFile(path) as archive:
            jobs = _zip_jobs(archive)
            if not jobs:
                raise LogParseError(f"{path}: zip archive holds no per-job .txt log")
            for job, info in jobs:
                with archive.open(info) as member:
                    scan_text(_text(member), log, job)
    except (zipfile.BadZipFile, EOFError) as exc:
        raise LogParseError(f"{path}: damaged zip archive ({exc})") from exc


def scan_reportlog(lines: Iterable[str], log: CiLog, source: str) -> None:
    """pytest-reportlog JSONL: exact node ids, phases, and the worker each test ran on."""
    recent: dict[str, deque[str]] = {}
    found: set[str] = set()
    ended = False
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
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


def parse_log(path: str | Path) -> CiLog:
    """Parse any supported CI log file into a :class:`CiLog` (streaming)."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except IsADirectoryError as exc:
        raise LogParseError(f"{path}: is a directory, not a log file") from exc
    except OSError as exc:
        raise LogParseError(f"{path}: cannot read ({exc.strerror})") from exc
    fmt = detect_format(head, path)
    log = CiLog(source=str(path), format=fmt)
    if fmt == "zip":
        scan_zip(path, log)
        return log
    if fmt == "junit":
        from syncgate.repro.junit import scan_junit

        scan_junit(path, log)
        return log
    with path.open("rb") as handle:
        reader = _text(handle)
        if fmt == "reportlog":
            scan_reportlog(reader, log, str(path))
        elif fmt == "gh":
            scan_gh(reader, log)
        else:
            scan_text(reader, log)
    return log

"""GitHub Actions annotations from the gate's JUnit reports, and ``syncgate check``'s verdict per level.

The gate writes JUnit XML into the report dir (``syncgate check`` names the offending call site
in each failing case's ``file``/``line``; the unit level's pytest writes the test's). A workflow
step runs ``syncgate annotate reports/`` (the one entry point; :func:`annotation_lines` is all it
prints) after the container exits, so each failure shows up on the pull request at that file and
line instead of only in a log.

Every file read here comes from a run that may have gone wrong or from a tree under test: only
regular files are read (a FIFO never blocks), a report.json of the wrong shape or nested too
deeply is one :class:`ReportDirError` line, and every text repeated is escaped by
:func:`~vllm_syncgate.workflow_commands.workflow_command`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import ReportDirError
from vllm_syncgate.escaping import terminal
from vllm_syncgate.safeio import json_loads, read_regular
from vllm_syncgate.workflow_commands import workflow_command

#: At most this many annotations per run: GitHub shows 10 per step and drops the rest anyway.
MAX_ANNOTATIONS = 50
#: ``syncgate check`` names each level's JUnit suite ``syncgate.<level>``.
LEVEL_SUITE = "syncgate."


@dataclass(frozen=True)
class Annotation:
    """One failing or erroring test case, as GitHub's ``::error`` workflow command."""

    title: str
    message: str
    file: str | None = None
    line: int | None = None

    def command(self) -> str:
        return workflow_command("error", self.message, file=self.file, line=self.line,
                                title=self.title)


def _line(value: str | None) -> int | None:
    # Taken as written; a non-number (Unicode digits too) is dropped rather than guessed.
    return int(value) if value is not None and value.isascii() and value.isdigit() else None


def junit_annotations(path: Path) -> Iterator[Annotation]:
    """Annotations for the failing and erroring test cases of one JUnit file; a case of a
    ``syncgate check`` level's suite (``syncgate.<level>``) says its level in the title."""
    try:
        root = ET.fromstring(read_regular(path))
    except OSError as exc:
        raise ReportDirError(f"{_shown(path)}: not a readable JUnit XML file "
                             f"({exc.strerror or exc})") from None
    except ET.ParseError as exc:
        raise ReportDirError(f"{_shown(path)}: not a readable JUnit XML file ({exc})") from None
    for suite in [root, *root.iter("testsuite")] if root.tag != "testsuite" else root.iter("testsuite"):
        suite_name = suite.get("name", "")
        tag = f" [{suite_name.removeprefix(LEVEL_SUITE)}]" if suite_name.startswith(LEVEL_SUITE) else ""
        for case in suite.findall("testcase"):
            problem = next((c for c in case if c.tag in ("failure", "error")), None)
            if problem is None:
                continue
            name = ".".join(p for p in (case.get("classname"), case.get("name")) if p)
            detail = problem.get("message") or (problem.text or "").strip() or problem.tag
            yield Annotation(title=f"{problem.tag}{tag}: {name}", message=detail,
                             file=case.get("file"), line=_line(case.get("line")))


def level_verdicts(report_dir: Path) -> list[str]:
    """One workflow command per level of each ``syncgate check`` report.json under
    ``report_dir`` (``levels`` object), then its one verdict: errors for failures, notices else."""
    lines = []
    for path in sorted(report_dir.rglob("report.json")):
        doc = _report(path)
        levels = doc.get("levels") if isinstance(doc, dict) else None
        if levels is None:
            continue
        if not isinstance(levels, dict) or not all(isinstance(v, dict) for v in levels.values()):
            raise ReportDirError(f"{_shown(path)}: not a syncgate check report "
                                 "('levels' is not an object of objects)")
        for name, level in levels.items():
            status = str(level.get("status", "?"))
            text = str(level.get("reason") or f"{status.upper()} in {level.get('duration_s', 0)} s")
            lines.append(workflow_command("error" if status == "fail" else "notice", text,
                                          title=f"syncgate check: {name} {status}"))
        verdict = "PASS" if doc.get("passed") else "FAIL"
        summary = ", ".join(f"{n} {lv.get('status')}" for n, lv in levels.items())
        lines.append(workflow_command("notice" if doc.get("passed") else "error",
                                      f"{verdict} ({summary})", title="syncgate check verdict"))
    return lines


def _report(path: Path) -> Any:
    try:
        return json_loads(read_regular(path))
    except OSError as exc:
        raise ReportDirError(f"{_shown(path)}: not a readable report ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ReportDirError(f"{_shown(path)}: not a readable report ({exc})") from None


def _shown(path: Path) -> str:
    return terminal(str(path))


def report_annotations(report_dir: Path) -> list[Annotation]:
    """Annotations from every ``*.xml`` under ``report_dir``, files in name order."""
    if not report_dir.is_dir():
        raise ReportDirError(f"{_shown(report_dir)}: report directory does not exist")
    found: list[Annotation] = []
    for path in sorted(report_dir.rglob("*.xml")):
        found.extend(junit_annotations(path))
    return found


def annotation_lines(report_dir: Path, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """What ``syncgate annotate`` prints: the verdict per level of each report.json, then at most
    ``limit`` failure annotations and one warning counting the rest."""
    annotations = report_annotations(report_dir)
    lines = level_verdicts(report_dir)
    lines += [annotation.command() for annotation in annotations[:limit]]
    if len(annotations) > limit:
        lines.append(f"::warning::{len(annotations) - limit} more failures; see the reports")
    return lines


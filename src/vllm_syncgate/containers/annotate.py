"""GitHub Actions annotations from the gate's JUnit reports, and ``syncgate check``'s verdict per level.

The gate writes JUnit XML into the report dir (``syncgate check`` names the offending call site
in each failing case's ``file``/``line``; the unit level's pytest writes the test's). A workflow
step runs ``python -m vllm_syncgate.containers.annotate reports/`` after the container exits, so each
failure shows up on the pull request at that file and line instead of only in a log.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllm_syncgate.errors import EXIT_OK, EXIT_USAGE, ReportDirError
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
    # Taken as written; a non-number is dropped rather than guessed.
    return int(value) if value is not None and value.isdigit() else None


def junit_annotations(path: Path) -> Iterator[Annotation]:
    """Annotations for the failing and erroring test cases of one JUnit file; a case of a
    ``syncgate check`` level's suite (``syncgate.<level>``) says its level in the title."""
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as exc:
        raise ReportDirError(f"{path}: not a readable JUnit XML file ({exc})") from exc
    root = tree.getroot()
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
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ReportDirError(f"{path}: not a readable report ({exc})") from exc
        levels = doc.get("levels") if isinstance(doc, dict) else None
        if not isinstance(levels, dict):
            continue
        for name, level in levels.items():
            status = str(level.get("status", "?"))
            text = level.get("reason") or f"{status.upper()} in {level.get('duration_s', 0)} s"
            lines.append(workflow_command("error" if status == "fail" else "notice", text,
                                          title=f"syncgate check: {name} {status}"))
        verdict = "PASS" if doc.get("passed") else "FAIL"
        summary = ", ".join(f"{n} {lv.get('status')}" for n, lv in levels.items())
        lines.append(workflow_command("notice" if doc.get("passed") else "error",
                                      f"{verdict} ({summary})", title="syncgate check verdict"))
    return lines


def report_annotations(report_dir: Path) -> list[Annotation]:
    """Annotations from every ``*.xml`` under ``report_dir``, files in name order."""
    if not report_dir.is_dir():
        raise ReportDirError(f"{report_dir}: report directory does not exist")
    found: list[Annotation] = []
    for path in sorted(report_dir.rglob("*.xml")):
        found.extend(junit_annotations(path))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Print the ``::error`` lines; exit 0 even when there are failures (the gate's exit code,
    not this step's, decides the job)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m vllm_syncgate.containers.annotate REPORT_DIR", file=sys.stderr)
        return EXIT_USAGE
    try:
        annotations = report_annotations(Path(args[0]))
        verdicts = level_verdicts(Path(args[0]))
    except ReportDirError as exc:
        print(f"syncgate annotate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    for line in verdicts:
        print(line)
    for annotation in annotations[:MAX_ANNOTATIONS]:
        print(annotation.command())
    if len(annotations) > MAX_ANNOTATIONS:
        print(f"::warning::{len(annotations) - MAX_ANNOTATIONS} more failures; see the reports")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

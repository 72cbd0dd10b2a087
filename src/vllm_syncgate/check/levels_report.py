"""One report for every level of a ``syncgate check`` run.

- terminal: a section per level (the serve level's section is its scenario table);
- ``report.json``: the serve level's document as before (when it ran), plus ``levels`` (status,
  reason, time, cases of each level) and ``passed`` for the whole run;
- ``junit.xml``: one ``<testsuite>`` per level, ``file``/``line`` on each failing case;
- ``syncs_per_step.png``: the serve level's plot, unchanged; absent when the serve level did not
  run (a plot left by an earlier run is removed, so it cannot pass for this one's).
"""

from __future__ import annotations

import contextlib
import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vllm_syncgate import junit_writer
from vllm_syncgate.check.levels import ERROR, FAIL, NOT_RUN, PASS, SKIPPED, LevelResult, passed
from vllm_syncgate.check.report import (
    CheckResult,
    failure_lines,
    fix_hints,
    junit,
    plot,
    table,
    to_json,
)
from vllm_syncgate.escaping import each_text, md_text, terminal
from vllm_syncgate.reportfiles import write_all
from vllm_syncgate.sitepaths import user_path

NAMES = {"json": "report.json", "junit": "junit.xml", "png": "syncs_per_step.png"}
#: report.json's ``schema``: bumped when a field changes meaning or goes (docs/report-json.md).
SCHEMA = "syncgate.check.report/1"


def status_word(level: LevelResult) -> str:
    return {SKIPPED: "SKIPPED", NOT_RUN: "NOT RUN", FAIL: "FAIL", ERROR: "ERROR"}.get(level.status,
                                                                                     "PASS")


def summary(levels: Sequence[LevelResult]) -> str:
    """``scan PASS 2.1s, unit FAIL 9.0s, serve NOT RUN``: the verdict line's detail; a passing
    level's remark in brackets (``unit PASS 9.0s [1 changed method not run here (covered by
    serve)]``)."""
    return ", ".join(f"{lv.name} {status_word(lv)}"
                     + (f" {lv.duration_s:.1f}s" if lv.status not in (SKIPPED, NOT_RUN) else "")
                     + (f" [{lv.reason}]" if lv.status == PASS and lv.reason else "")
                     for lv in levels)


def sections(levels: Sequence[LevelResult], serve: CheckResult | None) -> str:
    """The terminal's block per level; names from the tree are escaped to one safe line each."""
    levels = [each_text(level, terminal) for level in levels]
    lines: list[str] = []
    for level in levels:
        head = f"== {level.name}: {status_word(level)}"
        ran = level.name == "serve" and serve is not None  # an ERROR serve level ran its scenarios
        if level.status in (SKIPPED, NOT_RUN, ERROR):
            lines.append(f"{head} ({level.reason})")
            if not (ran or level.cases):
                continue
        else:
            cached = f"; cached from {level.cached_from}" if level.cached_from else ""
            remark = f"; {level.reason}" if level.reason else ""
            lines.append(f"{head} ({level.duration_s:.1f} s{cached}{remark})")
        lines += [f"   {note}" for note in level.notes]
        if ran:
            lines.append(table(serve))
        width = max((len(c.name) for c in level.cases), default=0)
        for case in level.cases:
            where = f"  [{case.file}:{case.line}]" if case.file and not case.passed else ""
            word = "PASS" if case.passed else "NOT TESTED" if case.skipped else "FAIL"
            lines.append(f"   {case.name:<{width}}  {word}  {case.detail}{where}")
    return "\n".join(lines)


def markdown(levels: Sequence[LevelResult], serve: CheckResult | None,
             paths: dict[str, Path]) -> str:
    """The job summary: the verdict, a row per level, each failure with its fix, the files."""
    verdict = "PASS" if passed(levels) else "FAIL"
    what = f" ({serve.what})" if serve is not None and serve.what else ""
    lines = [f"## syncgate check{what}: {verdict}", "", "| level | result | time | detail |",
             "|---|---|---|---|"]
    for level in levels:
        failing = [c for c in level.cases if not c.passed]
        detail = level.reason or "; ".join(f"{c.name}: {c.detail}" for c in failing[:3])
        time = f"{level.duration_s:.1f} s" if level.status not in (SKIPPED, NOT_RUN) else "-"
        lines.append(f"| {level.name} | {status_word(level)} | {time} | {md_text(detail)} |")
    if serve is not None:
        scenario_failures = failure_lines(serve)
        if scenario_failures:
            lines += ["", "### Failures", ""] + [f"- {md_text(line)}" for line in scenario_failures]
        hints = fix_hints(serve)
        if hints:
            lines += ["", "### How to fix", "", "```", *hints, "```"]
    lines += ["", "Report files: " + ", ".join(f"`{path}`" for path in paths.values())]
    return "\n".join(lines) + "\n"


def to_json_doc(levels: Sequence[LevelResult], serve: CheckResult | None,
                env: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {"schema": SCHEMA}
    doc.update(to_json(serve) if serve is not None else {"env": env})
    doc["passed"] = passed(levels)
    doc["levels"] = {level.name: level.to_json() for level in levels}
    return doc


def junit_doc(levels: Sequence[LevelResult], serve: CheckResult | None) -> str:
    suites = []
    for level in levels:
        if level.name == "serve" and serve is not None:
            suite = ET.fromstring(junit(serve))
            suite.set("name", "syncgate.serve")
        else:
            suite = junit_writer.new_suite(f"syncgate.{level.name}")
        if level.status == ERROR:
            case = junit_writer.add_case(suite, f"syncgate.{level.name}", level.name, time=0)
            ET.SubElement(case, "error", message=level.reason)
        if level.status in (SKIPPED, NOT_RUN):
            case = junit_writer.add_case(suite, f"syncgate.{level.name}", level.name, time=0)
            ET.SubElement(case, "skipped", message=level.reason)
        for item in level.cases:
            case = junit_writer.add_case(suite, f"syncgate.{level.name}", item.name,
                                         file=user_path(item.file) if item.file else None,
                                         line=item.line, time=item.time_s)
            if item.skipped:
                ET.SubElement(case, "skipped", message=item.detail[:500])
            elif not item.passed:
                kind = "error" if item.error else "failure"
                ET.SubElement(case, kind, message=item.detail[:500]).text = item.detail
        _code_property(suite, level)
        suites.append(suite)
    return junit_writer.suites_to_xml(suites)


def _code_property(suite: ET.Element, level: LevelResult) -> None:
    """The tree (and commit) a level ran, as suite properties: JUnit's place for run facts."""
    if level.code is None:
        return
    props = ET.Element("properties")
    for key in ("tree", "commit", "overlay", "installed"):
        if level.code.get(key):
            ET.SubElement(props, "property", name=f"syncgate.code.{key}", value=str(level.code[key]))
    suite.insert(0, props)


def write_level_reports(report_dir: Path, levels: Sequence[LevelResult],
                        serve: CheckResult | None, env: dict[str, Any],
                        png: bytes | None = None) -> dict[str, Path]:
    """Write the report's files all or none; the paths written, by key. ``png``: the serve
    level's plot already drawn (a cached verdict's), else it is drawn from ``serve``."""
    files: dict[str, Any] = {
        NAMES["json"]: json.dumps(to_json_doc(levels, serve, env), indent=2) + "\n",
        NAMES["junit"]: junit_doc(levels, serve),
    }
    if serve is not None:
        files[NAMES["png"]] = png if png is not None else lambda p: plot(serve, p)
    write_all(report_dir, files, create=False)  # the plan made it (and proved it writable)
    if serve is None:
        with contextlib.suppress(FileNotFoundError):
            (report_dir / NAMES["png"]).unlink()
    return {key: report_dir / name for key, name in NAMES.items() if name in files}

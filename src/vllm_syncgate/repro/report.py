"""One repro result, four renderings: terminal summary, Markdown, JSON and JUnit.

The JUnit keeps every rerun, which is what pytest's own ``--junitxml`` and pytest-rerunfailures
drop: a flaky test passes with one ``<flakyFailure>`` per failed run (Surefire's convention), a
broken one fails with one ``<rerunFailure>`` per further failed run, so CI dashboards that read
JUnit see the evidence, not just the last outcome.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_syncgate import junit_writer
from vllm_syncgate.reportfiles import printable, write_all
from vllm_syncgate.repro.judge import ReproVerdict, RunResult, TestVerdict
from vllm_syncgate.repro.model import CiLog

_ORDER = [ReproVerdict.BROKEN, ReproVerdict.ORDER_DEPENDENT, ReproVerdict.ENV_DEPENDENT,
          ReproVerdict.FLAKY, ReproVerdict.ENVIRONMENT, ReproVerdict.MISSING,
          ReproVerdict.NOT_REPRODUCED]


@dataclass
class ReproReport:
    """Everything a rendering needs."""

    log: CiLog
    verdicts: list[TestVerdict]
    where: str
    runs: int
    confidence: float
    env_differences: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. a shard that did not arrive

    @property
    def exit_code(self) -> int:
        return 1 if any(v.verdict is ReproVerdict.BROKEN for v in self.verdicts) else 0

    def sorted(self) -> list[TestVerdict]:
        return sorted(self.verdicts, key=lambda v: (_ORDER.index(v.verdict), v.nodeid))


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if x >= 0.01 or x == 0 else f"{100 * x:.1f}%"


def evidence(v: TestVerdict, confidence: float) -> str:
    """One line saying what the reruns showed for ``v``."""
    level = f"{100 * confidence:.0f}%"
    done = sum(r.outcome != "skipped" for r in v.runs)
    if v.verdict is ReproVerdict.BROKEN:
        assert v.interval is not None
        return (f"failed {v.failures}/{done} runs (rate {_pct(v.interval[0])}–"
                f"{_pct(v.interval[1])} at {level})" + (f"; {v.detail}" if v.detail else ""))
    if v.verdict is ReproVerdict.ENV_DEPENDENT:
        assert v.split is not None
        s = v.split
        return (f"fails only where {s.field} = {s.value}: {s.failures}/{s.runs} runs there, "
                f"0/{done - s.runs} where {s.field} = {' or '.join(map(str, s.others))} "
                f"(chance p = {s.p_value:.2g})")
    if v.verdict is ReproVerdict.FLAKY:
        assert v.interval is not None
        return (f"failed {v.failures}/{done} runs, rate {_pct(v.failures / done)} "
                f"({level} interval {_pct(v.interval[0])}–{_pct(v.interval[1])})")
    if v.verdict is ReproVerdict.ORDER_DEPENDENT:
        return (f"0/{done} alone; failed {v.replay_failures}/{len(v.replays)} after its "
                f"{len(v.predecessors)} CI predecessor(s)")
    if v.verdict is ReproVerdict.NOT_REPRODUCED:
        tail = f"; {len(v.replays)} CI-order replay(s) passed" if v.replays else ""
        bound = f"rate < {_pct(v.upper_bound)} at {level}" if v.upper_bound is not None else ""
        return f"passed {done}/{done} runs, {bound}{tail}" + (f" ({v.detail})" if v.detail
                                                              else "")
    return v.detail


def to_json(report: ReproReport) -> dict[str, Any]:
    """Machine-readable result (stable keys, every run kept)."""
    log = report.log
    return {
        "log": {"source": log.source, "format": log.format, "seed": log.seed, "env": log.env,
                "truncated": log.truncated, "counts": log.counts},
        "where": report.where,
        "runs": report.runs,
        "confidence": report.confidence,
        "env_differences": {k: {"ci": a, "here": b} for k, (a, b) in
                            report.env_differences.items()},
        "exit_code": report.exit_code,
        "notes": report.notes,
        "tests": [
            {"nodeid": v.nodeid, "verdict": v.verdict.value, "ci_outcome": v.ci.outcome.value,
             "ci_job": v.ci.job, "ci_worker": v.ci.worker, "failures": v.failures,
             "runs": len(v.runs), "interval": list(v.interval) if v.interval else None,
             "upper_bound": v.upper_bound, "detail": v.detail,
             "split": None if v.split is None else {
                 "field": v.split.field, "value": v.split.value, "others": list(v.split.others),
                 "failures": v.split.failures, "runs": v.split.runs,
                 "p_value": v.split.p_value},
             "summary": evidence(v, report.confidence),
             "predecessors": list(v.predecessors),
             "replay_failures": v.replay_failures, "replays": len(v.replays),
             "first_traceback": v.first_traceback,
             "results": [_run_json(r) for r in [*v.runs, *v.replays]]}
            for v in report.sorted()
        ],
    }


def _run_json(r: RunResult) -> dict[str, Any]:
    return {"run": r.run, "outcome": r.outcome, "phase": r.phase, "worker": r.worker,
            "duration": round(r.duration, 4), "replay": r.replay, "signature": r.signature,
            "order": r.order, "shard": r.shard}


def to_markdown(report: ReproReport) -> str:
    """A report to paste into the PR instead of typing ``/rerun``."""
    log = report.log
    lines = ["# syncgate repro", "",
             f"Log `{log.source}` ({log.format}{', truncated' if log.truncated else ''}); "
             f"reran in {report.where}, up to {report.runs} runs per test.", ""]
    if log.seed is not None:
        lines += [f"pytest-randomly seed from CI: `{log.seed}`.", ""]
    lines += [f"> {note}" for note in report.notes] + ([""] if report.notes else [])
    if report.env_differences:
        lines += ["| environment | CI | here |", "|---|---|---|"]
        lines += [f"| {k} | `{a}` | `{b}` |" for k, (a, b) in report.env_differences.items()]
        lines.append("")
    if not report.verdicts:
        lines.append("The log reports no failed or errored test; nothing to rerun.")
        return printable("\n".join(lines) + "\n")
    lines += ["| verdict | test | evidence |", "|---|---|---|"]
    for v in report.sorted():
        lines.append(f"| **{v.verdict.value}** | `{v.nodeid}` | "
                     f"{evidence(v, report.confidence).replace('|', '/')} |")
    for v in report.sorted():
        if v.verdict in (ReproVerdict.BROKEN, ReproVerdict.ORDER_DEPENDENT) and v.first_traceback:
            lines += ["", f"## `{v.nodeid}` — first failure", "", "```",
                      v.first_traceback.rstrip(), "```"]
    return printable("\n".join(lines) + "\n")


def to_junit(report: ReproReport) -> str:
    """JUnit XML with every rerun kept (flakyFailure / rerunFailure)."""
    suite = junit_writer.new_suite("syncgate-repro")
    for v in report.sorted():
        classname, _, name = v.nodeid.rpartition("::")
        case = junit_writer.add_case(suite, classname or v.nodeid, name,
                                     file=v.nodeid.split("::", 1)[0])
        summary = evidence(v, report.confidence)
        failed = [r for r in [*v.runs, *v.replays] if r.outcome in ("failed", "error")]
        if v.verdict in (ReproVerdict.BROKEN, ReproVerdict.ORDER_DEPENDENT):
            head = ET.SubElement(case, "failure", message=f"{v.verdict.value}: {summary}",
                                 type=v.verdict.value)
            head.text = failed[0].longrepr if failed else ""
            _reruns(case, "rerunFailure", failed[1:])
        elif v.verdict is ReproVerdict.ENVIRONMENT:
            ET.SubElement(case, "error", message=summary, type="environment")
        elif v.verdict is ReproVerdict.MISSING:
            ET.SubElement(case, "skipped", message=f"missing: {summary}")
        else:  # flaky, environment-dependent, not reproduced: passed, failures kept
            _reruns(case, "flakyFailure", failed)
        ET.SubElement(case, "system-out").text = f"{v.verdict.value}: {summary}"
    return junit_writer.to_xml(suite)


def failure_message(r: RunResult) -> str:
    """One line for a failed run: its first ``E`` line (the assertion), else its signature."""
    for line in r.longrepr.splitlines():
        if line.startswith("E "):
            return line[1:].strip()
    return r.signature or f"{r.outcome} in {r.phase}"


def _reruns(case: ET.Element, tag: str, runs: list[RunResult]) -> None:
    """Surefire's flakyFailure/rerunFailure: message, type, stackTrace per failed run."""
    for r in runs:
        where = f"run {r.run}{' (replay)' if r.replay else ''}" + (f", shard {r.shard}"
                                                                    if r.shard else "")
        element = ET.SubElement(case, tag, message=f"{where}: {failure_message(r)}",
                                type=(r.signature.split(" at ", 1)[0] or r.outcome))
        ET.SubElement(element, "stackTrace").text = r.longrepr


def to_terminal(report: ReproReport, traceback_lines: int = 12) -> str:
    """The summary printed at the end of ``syncgate repro``."""
    log = report.log
    out = [f"syncgate repro: {log.source} ({log.format}"
           f"{', TRUNCATED' if log.truncated else ''}), reran in {report.where}"]
    if log.seed is not None:
        out.append(f"  CI pytest-randomly seed: {log.seed}")
    for key, (ci, here) in report.env_differences.items():
        out.append(f"  environment differs: {key}: CI {ci!r}, here {here!r}")
    out += [f"  NOTE: {note}" for note in report.notes]
    if not report.verdicts:
        out.append("  no failed or errored tests in the log: nothing to rerun")
        return printable("\n".join(out) + "\n")
    width = max(len(v.verdict.value) for v in report.verdicts)
    for v in report.sorted():
        out.append(f"  {v.verdict.value:<{width}}  {v.nodeid}")
        out.append(f"  {'':<{width}}    {evidence(v, report.confidence)}")
        if v.verdict is ReproVerdict.BROKEN and v.first_traceback:
            tb = v.first_traceback.rstrip().splitlines()[-traceback_lines:]
            out += [f"  {'':<{width}}    | {line}" for line in tb]
    tally: dict[str, int] = {}
    for v in report.verdicts:
        tally[v.verdict.value] = tally.get(v.verdict.value, 0) + 1
    out.append("  " + ", ".join(f"{n} {k}" for k, n in tally.items()))
    return printable("\n".join(out) + "\n")


def write_reports(report: ReproReport, directory: Path) -> list[Path]:
    """Write report.md, report.json and junit.xml into ``directory``: all three or none."""
    return write_all(directory, {"report.md": to_markdown(report),
                                 "report.json": json.dumps(to_json(report), indent=2) + "\n",
                                 "junit.xml": to_junit(report)}, what="reports")

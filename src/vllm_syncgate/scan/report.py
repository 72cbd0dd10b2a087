"""Scan results for people (text: :mod:`vllm_syncgate.scan.terminal`) and for CI (JSON, SARIF, GitHub).

The JSON is a contract: ``findings[]`` always carries ``file, line, qualname, kind, api, guard,
entry, path``; more keys may be added, none removed or renamed. Counting is by site first
(``sites``, ``failing_sites``), site x entry pairs second (``pairs``, ``failing_pairs``; the older
``findings`` and ``failing`` are the same pair counts). ``failing_only`` keeps only the findings
that fail the gate in every format; the summary still describes the whole scan.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from vllm_syncgate import __version__
from vllm_syncgate.audit.events import SyncKind
from vllm_syncgate.escaping import json_safe, md_code, md_text
from vllm_syncgate.fixhints import fix_line
from vllm_syncgate.scan.callgraph import Finding, ScanResult
from vllm_syncgate.scan.project import ProjectScan
from vllm_syncgate.scan.terminal import Counts, Site, sites, to_terminal
from vllm_syncgate.workflow_commands import workflow_command

SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_RULE_TEXT = {
    SyncKind.DEVICE_SYNC: "device-wide synchronize on a per-step path",
    SyncKind.STREAM_SYNC: "stream synchronize on a per-step path",
    SyncKind.EVENT_SYNC: "event synchronize on a per-step path",
    SyncKind.BLOCKING_READBACK: "device value read back on the host on a per-step path",
    SyncKind.BLOCKING_COPY: "copy between host and device the host waits for on a per-step path",
}


def _shown(result: ScanResult, failing_only: bool) -> list[Finding]:
    return result.failing if failing_only else result.findings


def fix_text(finding: Finding, device: str = "cuda") -> str:
    """The fix of a failing finding, one line (JSON ``fix``, SARIF and GitHub messages)."""
    return fix_line(finding.symbol, finding.kind, inline=True, device=device,
                    upload=finding.upload)


def site_message(site: Site, device: str = "cuda") -> str:
    """A failing site in one line with its entry points and fix: GitHub annotations, and each
    failing case of check's scan level."""
    first = site.first
    return (f"{first.api} ({first.kind}) in {first.qualname}, reachable from "
            f"{', '.join(site.entries)}; {fix_text(first, device)}")


def project_json(project: ProjectScan | None) -> dict[str, Any]:
    """The project's part of the verdict: settings and budget in force, what could not be read,
    what was excluded, the allows that matched nothing, and the verdict."""
    if project is None:
        return {"settings": None}
    return {
        "passed": project.passed,
        "settings": project.settings.to_json(),
        "budget": project.budget,
        "device": project.device,
        "gate_failures": project.gate_failures,
        "unread": [{"file": p.file, "reason": p.reason} for p in project.unread],
        "excluded": [{"file": p.file, "reason": p.reason, "excluded": why}
                     for p, why in project.excluded],
        "unused": project.unused,
    }


def to_json(result: ScanResult, *, failing_only: bool = False,
            project: ProjectScan | None = None, device: str = "cuda") -> str:
    counts = Counts.of(result)
    data = {
        "schema": SCHEMA_VERSION,
        "tool": f"syncgate {__version__}",
        "findings": [f.to_json() | ({"fix": fix_text(f, device)} if f.gates else {})
                     for f in _shown(result, failing_only)],
        "summary": {
            "files": result.files,
            "lines": result.lines,
            "counting": "sites",  # sites first; pairs = site x entry point
            "sites": counts.sites,
            "failing_sites": counts.failing_sites,
            "pairs": counts.pairs,
            "failing_pairs": counts.failing_pairs,
            "findings": counts.pairs,  # site x entry pairs (as before)
            "failing": counts.failing_pairs,  # site x entry pairs that fail the gate (as before)
            "by_guard": _count(result.findings, lambda f: f.guard),
        },
        **project_json(project),
        "entries": result.entries,
        "problems": [{"file": p.file, "reason": p.reason} for p in result.problems],
        "skipped": [{"file": p.file, "reason": p.reason} for p in result.skipped],
        "warnings": result.warnings,
    }
    return json.dumps(json_safe(data), indent=2)


def to_sarif(result: ScanResult, *, failing_only: bool = False, device: str = "cuda") -> str:
    rules = [
        {"id": kind.value, "shortDescription": {"text": text}} for kind, text in _RULE_TEXT.items()
    ]
    results = []
    for finding in _shown(result, failing_only):
        text = _message(finding) + (f"; {fix_text(finding, device)}" if finding.gates else "")
        results.append({
            "ruleId": finding.kind,
            "level": "error" if finding.gates else "note",
            "message": {"text": text},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": finding.file},
                    "region": {"startLine": finding.line},
                },
                "logicalLocations": [{"fullyQualifiedName": finding.symbol, "kind": "function"}],
            }],
            "properties": {"guard": finding.guard, "entry": finding.entry,
                           "path": list(finding.path), "api": finding.api},
        })
    sarif = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "syncgate-scan", "version": __version__, "rules": rules}},
            "results": results,
        }],
    }
    return json.dumps(json_safe(sarif), indent=2)


def to_github(result: ScanResult, *, device: str = "cuda", project: ProjectScan | None = None) -> str:
    """One ``::error`` per failing call site (with its entry points and fix), then one summary
    line. Nothing for guarded sites: GitHub shows about 10 annotations per step."""
    lines = []
    for site in sites(result.failing):
        first = site.first
        lines.append(workflow_command("error", site_message(site, device), file=first.file,
                                      line=first.line, title=f"syncgate scan: {first.kind}"))
    unread = project.unread if project is not None else [*result.problems, *result.skipped]
    level = "error" if project is not None and project.gate else "warning"
    for problem in unread:
        lines.append(workflow_command(level, "not read: " + problem.reason, file=problem.file))
    for unused in project.unused if project is not None else ():
        lines.append(workflow_command("error" if project.strict else "warning", unused))
    gate = len(project.gate_failures) if project is not None else 0
    lines.append(f"syncgate scan: {Counts.of(result).line(gate)}")
    return "\n".join(lines)


def to_markdown(result: ScanResult, project: ProjectScan | None = None) -> str:
    """The job summary: the counts, then a row per failing site with its entry points, then the
    unread files and unused allows."""
    counts = Counts.of(result)
    gate = project.gate_failures if project is not None else []
    lines = [f"## syncgate scan: {counts.line(len(gate))}", ""]
    failing = sites(result.failing)
    if failing:
        lines += ["| site | kind | call | entry points |", "|---|---|---|---|"]
        lines += [f"| {md_code(f'{s.first.file}:{s.first.line}')} | {md_text(s.first.kind)} | "
                  f"{md_code(s.first.api)} | {md_text(', '.join(s.entries))} |" for s in failing]
        lines += ["", "Each failure's fix is in the scan's output and annotations "
                  "(or allow it: `# syncgate: allow[kind] reason`)."]
    lines += [f"- {md_text(line)}" for line in (project.verdict_lines() if project else ())]
    lines.append(f"{result.files} files, {result.lines} lines, {len(result.entries)} entry points")
    return "\n".join(lines) + "\n"


def to_text(result: ScanResult, *, failing_only: bool = False, verbose: bool = False,
            colour: bool = False, header: Sequence[str] = (), device: str = "cuda",
            project: ProjectScan | None = None) -> str:
    """The linter-style text (:func:`vllm_syncgate.scan.terminal.to_terminal`)."""
    return to_terminal(result, verbose=verbose and not failing_only, colour=colour, header=header,
                       device=device, footer=project.verdict_lines() if project else (),
                       gate_failures=len(project.gate_failures) if project else 0)


FORMATS: dict[str, Callable[..., str]] = {
    "text": to_text,
    "json": to_json,
    "sarif": to_sarif,
    "github": to_github,
}


def _message(finding: Finding) -> str:
    text = (f"{finding.api} ({finding.kind}) in {finding.qualname}, reachable from "
            f"{finding.entry} via {' -> '.join(finding.path)}; guard: {finding.guard}")
    return text + (f" ({finding.reason})" if finding.reason else "")


def _count(findings: list[Finding], key: Callable[[Finding], str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for finding in findings:
        counts[key(finding)] = counts.get(key(finding), 0) + 1
    return counts

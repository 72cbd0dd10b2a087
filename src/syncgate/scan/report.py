"""Scan results for people (text grouped by entry point) and for CI (JSON, SARIF, GitHub).

The JSON is a contract: ``findings[]`` always carries ``file, line, qualname, kind, api, guard,
entry, path``; more keys may be added, none removed or renamed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import groupby

from syncgate import __version__
from syncgate.audit.events import SyncKind
from syncgate.scan.callgraph import Finding, ScanResult
from syncgate.workflow_commands import workflow_command

SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_RULE_TEXT = {
    SyncKind.DEVICE_SYNC: "device-wide synchronize on a per-step path",
    SyncKind.STREAM_SYNC: "stream synchronize on a per-step path",
    SyncKind.EVENT_SYNC: "event synchronize on a per-step path",
    SyncKind.BLOCKING_READBACK: "device value read back on the host on a per-step path",
    SyncKind.BLOCKING_COPY: "device-to-host copy the host waits for on a per-step path",
}


def to_json(result: ScanResult) -> str:
    data = {
        "schema": SCHEMA_VERSION,
        "tool": f"syncgate {__version__}",
        "findings": [f.to_json() for f in result.findings],
        "summary": {
            "files": result.files,
            "lines": result.lines,
            "findings": len(result.findings),  # site x entry pairs
            "failing": len(result.failing),  # site x entry pairs that fail the gate
            "sites": len({(f.file, f.line) for f in result.findings}),
            "failing_sites": len({(f.file, f.line) for f in result.failing}),
            "by_guard": _count(result.findings, lambda f: f.guard),
        },
        "entries": result.entries,
        "problems": [{"file": p.file, "reason": p.reason} for p in result.problems],
        "skipped": [{"file": p.file, "reason": p.reason} for p in result.skipped],
        "warnings": result.warnings,
    }
    return json.dumps(data, indent=2)


def to_sarif(result: ScanResult) -> str:
    rules = [
        {"id": kind.value, "shortDescription": {"text": text}} for kind, text in _RULE_TEXT.items()
    ]
    results = []
    for finding in result.findings:
        results.append({
            "ruleId": finding.kind,
            "level": "error" if finding.gates else "note",
            "message": {"text": _message(finding)},
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
    return json.dumps(sarif, indent=2)


def to_github(result: ScanResult) -> str:
    """Workflow commands: ``::error`` for gate failures, ``::notice`` for guarded sites."""
    lines = []
    for finding in result.findings:
        lines.append(workflow_command("error" if finding.gates else "notice", _message(finding),
                                      file=finding.file, line=finding.line,
                                      title=f"syncgate scan: {finding.kind}"))
    for problem in result.problems:
        lines.append(workflow_command("warning", "not scanned: " + problem.reason,
                                      file=problem.file))
    return "\n".join(lines)


def to_text(result: ScanResult, show_guarded: bool = True) -> str:
    """Findings grouped by entry point, each with its code line, guard and call path."""
    out: list[str] = []
    shown = [f for f in result.findings if show_guarded or f.gates]
    for entry, group in groupby(sorted(shown, key=lambda f: (f.entry, f.runner)),
                                key=lambda f: (f.entry, f.runner)):
        name, runner = entry
        out.append(f"{name}  ({runner.rpartition(':')[0]})")
        for finding in group:
            mark = "FAIL" if finding.gates else "ok  "
            out.append(f"  {mark} {finding.file}:{finding.line}  {finding.kind}  {finding.api}"
                       f"  [guard: {finding.guard}]")
            out.append(f"         {finding.code}")
            out.append(f"         path: {' -> '.join(finding.path)}")
            for condition in finding.conditions:
                out.append(f"         when: {condition}")
            if finding.reason:
                label = "allowed" if finding.guard == "allowed" else "note"
                out.append(f"         {label}: {finding.reason}")
        out.append("")
    unique = {(f.file, f.line) for f in result.failing}
    sites = {(f.file, f.line) for f in result.findings}
    out.append(
        f"{result.files} files, {result.lines} lines, {len(result.entries)} entry points: "
        f"{len(result.findings)} findings (site x entry pairs) at {len(sites)} sites, "
        f"{len(unique)} unguarded sync sites ({'FAIL' if unique else 'ok'})"
    )
    for problem in result.problems:
        out.append(f"not scanned: {problem.file}: {problem.reason}")
    return "\n".join(out)


FORMATS: dict[str, Callable[[ScanResult], str]] = {
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

"""A baseline of known findings: ``--write-baseline FILE`` records them, ``--baseline FILE`` keeps
them from failing the gate while every new one still fails.

A finding is known by what survives unrelated edits: its file (relative to the baseline file's
directory, so the baseline can be committed next to the tree), the function it is in, its kind,
its API and its code line, not its line number. A known finding is listed with guard
``baseline`` so it stays visible; an entry the scan no longer finds is reported as fixed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import BaselineError
from vllm_syncgate.reportfiles import write_all
from vllm_syncgate.safeio import json_loads, read_regular
from vllm_syncgate.scan.callgraph import Finding

SCHEMA = "vllm_syncgate.scan.baseline/1"
GUARD = "baseline"
Key = tuple[str, str, str, str, str]


def _relative(file: str, root: Path) -> str:
    try:
        return Path(file).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(file).as_posix()


def key(finding: Finding, root: Path) -> Key:
    return (_relative(finding.file, root), finding.qualname, finding.kind, finding.api,
            " ".join(finding.code.split()))


def _entry(k: Key) -> dict[str, str]:
    return dict(zip(("file", "qualname", "kind", "api", "code"), k, strict=True))


def write_baseline(path: Path, findings: Iterable[Finding]) -> int:
    """Record every failing finding's site (once per site); the number of entries written."""
    root = path.parent
    keys = sorted({key(f, root) for f in findings if f.gates})
    doc = {"schema": SCHEMA, "findings": [_entry(k) for k in keys]}
    write_all(root, {path.name: json.dumps(doc, indent=2) + "\n"}, what="the scan baseline")
    return len(keys)


@dataclass(frozen=True)
class Baseline:
    path: Path
    keys: frozenset[Key]

    def apply(self, findings: Iterable[Finding]) -> tuple[list[Finding], list[dict[str, str]]]:
        """Known failing findings become ``baseline``; the entries no longer found (fixed)."""
        seen: set[Key] = set()
        out = []
        for finding in findings:
            k = key(finding, self.path.parent)
            if finding.gates and k in self.keys:
                seen.add(k)
                finding = replace(finding, guard=GUARD, reason=f"known: in the baseline {self.path}")
            out.append(finding)
        return out, [_entry(k) for k in sorted(self.keys - seen)]


def load_baseline(path: Path) -> Baseline:
    try:
        doc: Any = json_loads(read_regular(path))
    except OSError as exc:
        raise BaselineError(path, "<file>", f"cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise BaselineError(path, "<file>", f"not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise BaselineError(path, "schema", f"expected {SCHEMA!r} (write one with --write-baseline)")
    entries = doc.get("findings")
    if not isinstance(entries, list):
        raise BaselineError(path, "findings", "must be a list")
    keys = set()
    for i, entry in enumerate(entries):
        fields = ("file", "qualname", "kind", "api", "code")
        if not isinstance(entry, dict) or not all(isinstance(entry.get(f), str) for f in fields):
            raise BaselineError(path, f"findings[{i}]", f"must have string {', '.join(fields)}")
        keys.add(tuple(entry[f] for f in fields))
    return Baseline(path, frozenset(keys))

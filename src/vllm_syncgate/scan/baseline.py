"""A baseline of known findings: ``--write-baseline FILE`` records them, ``--baseline FILE`` keeps
them from failing the gate while every new one still fails.

A finding is known by what survives unrelated edits: its file (relative to the baseline file's
directory, so the baseline can be committed next to the tree), the function it is in, its kind,
its API and its code line (as Python numbers lines), not its line number. An entry may carry a
``reason``, shown with the finding it excuses. A known finding is listed with guard ``baseline``
so it stays visible; an entry the scan no longer finds is reported as unused (fixed?), and fails
``scan --strict``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

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


_FIELDS = ("file", "qualname", "kind", "api", "code")


def _entry(k: Key) -> dict[str, str]:
    return dict(zip(_FIELDS, k, strict=True))


def describe(entry: dict[str, str]) -> str:
    """An entry in one line, for the unused-entry warning."""
    return f"{entry['file']} {entry['qualname']} {entry['kind']} {entry['api']} ({entry['code']!r})"


def write_baseline(path: Path, findings: Iterable[Finding]) -> int:
    """Record every failing finding's site (once per site); the number of entries written. The
    reasons of a baseline already at ``path`` stay with their entries."""
    root = path.parent
    keys = sorted({key(f, root) for f in findings if f.gates})
    try:
        reasons = load_baseline(path).reasons if path.is_file() else {}
    except BaselineError:  # not a baseline (yet): nothing to keep
        reasons = {}
    doc = {"schema": SCHEMA, "findings": [_entry(k) | ({"reason": reasons[k]} if k in reasons else {})
                                          for k in keys]}
    write_all(root, {path.name: json.dumps(doc, indent=2) + "\n"}, what="the scan baseline")
    return len(keys)


@dataclass(frozen=True)
class Baseline:
    path: Path
    keys: frozenset[Key]
    reasons: dict[Key, str] = field(default_factory=dict)

    def apply(self, findings: Iterable[Finding]) -> tuple[list[Finding], list[dict[str, str]]]:
        """Known failing findings become ``baseline``; the entries no longer found (fixed)."""
        seen: set[Key] = set()
        out = []
        for finding in findings:
            k = key(finding, self.path.parent)
            if finding.gates and k in self.keys:
                seen.add(k)
                why = self.reasons.get(k)
                finding = replace(finding, guard=GUARD, reason=(
                    f"known: {why} (baseline {self.path})" if why else f"known: in the baseline {self.path}"))
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
    reasons: dict[Key, str] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(f), str) for f in _FIELDS):
            raise BaselineError(path, f"findings[{i}]", f"must have string {', '.join(_FIELDS)}")
        k = cast(Key, tuple(entry[f] for f in _FIELDS))
        keys.add(k)
        reason = entry.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise BaselineError(path, f"findings[{i}].reason", "must be a string")
        if reason and reason.strip():
            reasons[k] = reason.strip()
    return Baseline(path, frozenset(keys), reasons)

"""Inline allow comments: ``x.item()  # syncgate: allow[blocking_readback] read once at start-up``.

A finding whose line (or the comment-only line right above it) carries such a comment for its
kind is ``allowed``, with the comment's reason. The reason is required: a comment without one,
or naming a kind that does not exist, allows nothing and is reported as a warning naming the
file and line, so a typo cannot silently open the gate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from vllm_syncgate.audit.events import SYNC_KINDS
from vllm_syncgate.scan.callgraph import Finding
from vllm_syncgate.scan.guards import Guard

_COMMENT = re.compile(r"#\s*syncgate:\s*allow\[([^\]]*)\]\s*(.*)$")


@dataclass(frozen=True)
class InlineAllow:
    kinds: frozenset[str]
    reason: str


def parse_comment(line: str) -> InlineAllow | str | None:
    """The allow on a source line; a problem (str) when it is malformed; None when absent."""
    match = _COMMENT.search(line)
    if match is None:
        return None
    kinds = frozenset(k.strip() for k in match.group(1).split(",") if k.strip())
    unknown = sorted(kinds - set(SYNC_KINDS))
    if not kinds or unknown:
        return (f"unknown sync kind {', '.join(unknown)!s} in allow[...] (expected {', '.join(SYNC_KINDS)})"
                if unknown else "allow[] names no sync kind")
    reason = match.group(2).strip()
    if not reason:
        return f"allow[{', '.join(sorted(kinds))}] needs a reason after it (why the sync is by design)"
    return InlineAllow(kinds, reason)


def _lines(file: str, cache: dict[str, list[str]]) -> list[str]:
    if file not in cache:
        try:
            cache[file] = Path(file).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            cache[file] = []
    return cache[file]


def _comment_at(lines: list[str], line: int) -> tuple[InlineAllow | str | None, int]:
    """The allow on ``line`` (1-based), else on the comment-only line right above it."""
    if 0 < line <= len(lines):
        found = parse_comment(lines[line - 1])
        if found is not None:
            return found, line
        above = lines[line - 2].strip() if line > 1 else ""
        if above.startswith("#"):
            return parse_comment(above), line - 1
    return None, line


def apply_inline_allows(findings: Iterable[Finding]) -> tuple[list[Finding], list[str]]:
    """Findings with inline-allowed ones turned ``allowed``; warnings for malformed comments."""
    cache: dict[str, list[str]] = {}
    out: list[Finding] = []
    warnings: dict[str, None] = {}
    for finding in findings:
        found, at = _comment_at(_lines(finding.file, cache), finding.line)
        if isinstance(found, str):
            warnings[f"{finding.file}:{at}: # syncgate: {found}; the sync is not allowed"] = None
        elif found is not None and finding.gates and finding.kind in found.kinds:
            finding = replace(finding, guard=Guard.ALLOWED.value, reason=f"inline: {found.reason}")
        out.append(finding)
    return out, list(warnings)

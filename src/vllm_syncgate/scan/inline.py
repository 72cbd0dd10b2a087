"""Inline allow comments: ``x.item()  # syncgate: allow[blocking_readback] read once at start-up``.

A finding whose line (or the comment-only line right above it) carries such a comment for its
kind is ``allowed``, with the comment's reason. The reason is required: a comment without one,
or naming a kind that does not exist, allows nothing and is reported as a warning naming the
file and line, so a typo cannot silently open the gate. Only real comment tokens count, on lines
as Python numbers them (:mod:`vllm_syncgate.scan.lines`): allow text inside a string literal, or
after a character that ``str.splitlines()`` would break at, allows nothing. An allow that excused
no failing sync is reported as unused, as ruff reports an unused ``noqa``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from vllm_syncgate.audit.events import SYNC_KINDS
from vllm_syncgate.safeio import read_regular
from vllm_syncgate.scan.callgraph import Finding
from vllm_syncgate.scan.guards import Guard
from vllm_syncgate.scan.lines import comments, python_lines

_COMMENT = re.compile(r"#\s*syncgate:\s*allow\[([^\]]*)\]\s*(.*)$")
_MARK = b"syncgate:"


@dataclass(frozen=True)
class InlineAllow:
    kinds: frozenset[str]
    reason: str


def parse_comment(comment: str) -> InlineAllow | str | None:
    """The allow in a comment token; a problem (str) when it is malformed; None when absent."""
    match = _COMMENT.search(comment)
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


@dataclass
class _File:
    """A scanned file's comment tokens by line, and which lines hold only a comment."""

    comments: dict[int, str] = field(default_factory=dict)
    comment_only: frozenset[int] = frozenset()

    @classmethod
    def read(cls, file: str) -> _File:
        try:
            data = read_regular(file)
        except OSError:
            return cls()
        if _MARK not in data:
            return cls()
        text = data.decode("utf-8-sig", errors="replace")  # a BOM is no character of line 1
        found = comments(text)
        lines = python_lines(text)
        only = frozenset(n for n in found if 0 < n <= len(lines) and lines[n - 1].lstrip().startswith("#"))
        return cls(found, only)

    def allow_at(self, line: int) -> tuple[InlineAllow | str | None, int]:
        """The allow on ``line`` (1-based), else on the comment-only line right above it."""
        if line in self.comments:
            found = parse_comment(self.comments[line])
            if found is not None:
                return found, line
        if line - 1 in self.comment_only:
            return parse_comment(self.comments[line - 1]), line - 1
        return None, line


def apply_inline_allows(findings: Iterable[Finding], files: Iterable[str] = ()
                        ) -> tuple[list[Finding], list[str]]:
    """Findings with inline-allowed ones turned ``allowed``; warnings for malformed comments and,
    for each of ``files`` (the files scanned), for every allow that excused no failing sync."""
    cache: dict[str, _File] = {}

    def parsed(file: str) -> _File:
        if file not in cache:
            cache[file] = _File.read(file)
        return cache[file]

    out: list[Finding] = []
    warnings: dict[str, None] = {}
    used: set[tuple[str, int]] = set()
    for finding in findings:
        found, at = parsed(finding.file).allow_at(finding.line)
        if isinstance(found, str):
            warnings[f"{finding.file}:{at}: # syncgate: {found}; the sync is not allowed"] = None
        elif found is not None and finding.gates and finding.kind in found.kinds:
            used.add((finding.file, at))
            finding = replace(finding, guard=Guard.ALLOWED.value, reason=f"inline: {found.reason}")
        out.append(finding)
    for file in files:
        for line, comment in sorted(parsed(file).comments.items()):
            allow = parse_comment(comment)
            if isinstance(allow, InlineAllow) and (file, line) not in used:
                warnings[f"{file}:{line}: unused allow: # syncgate: allow[{', '.join(sorted(allow.kinds))}] "
                         "excuses no failing sync here"] = None
    return out, list(warnings)

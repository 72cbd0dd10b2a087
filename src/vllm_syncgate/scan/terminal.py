"""The scan's text report, read like a linter's: failures only unless asked, one block per call
site with every entry point that reaches it and its fix, colour on a terminal.

Counting is by **site** (a file and line with a sync); a site reached from several entry points is
one site and several *site x entry pairs*, the second figure. ``NO_COLOR`` turns colour off,
``FORCE_COLOR`` on (also into a pipe), as https://no-color.org and most CLIs do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

from vllm_syncgate.escaping import each_text, terminal
from vllm_syncgate.fixhints import fix_lines
from vllm_syncgate.scan.callgraph import Finding, ScanResult

_RED, _GREEN, _YELLOW, _BOLD, _DIM, _RESET = ("\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[1m",
                                              "\x1b[2m", "\x1b[0m")


def use_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


@dataclass(frozen=True)
class Site:
    """One call site and every finding (entry point) that reaches it."""

    findings: tuple[Finding, ...]

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def gates(self) -> bool:
        return any(f.gates for f in self.findings)

    @property
    def entries(self) -> list[str]:
        return sorted({f.entry for f in self.findings})


def sites(findings: Iterable[Finding]) -> list[Site]:
    """Findings grouped by call site (file, line, kind, API), in file and line order."""
    grouped: dict[tuple[str, int, str, str], list[Finding]] = {}
    for finding in findings:
        grouped.setdefault((finding.file, finding.line, finding.kind, finding.api), []).append(finding)
    return [Site(tuple(group)) for _, group in sorted(grouped.items(), key=lambda kv: kv[0])]


@dataclass(frozen=True)
class Counts:
    """The one counting rule: sites first, site x entry pairs second."""

    sites: int
    failing_sites: int
    pairs: int
    failing_pairs: int

    @classmethod
    def of(cls, result: ScanResult) -> Counts:
        every = sites(result.findings)
        return cls(len(every), sum(s.gates for s in every), len(result.findings), len(result.failing))

    def line(self, gate_failures: int = 0) -> str:
        """The verdict; ``gate_failures``: unread files or unused allows that fail it too."""
        verdict = "FAIL" if self.failing_sites or gate_failures else "ok"
        more = f"; {gate_failures} gate failure(s): unread files or unused allows" if gate_failures else ""
        return (f"{verdict}: {self.failing_sites} failing site(s) of {self.sites} "
                f"({self.failing_pairs} of {self.pairs} site x entry pairs){more}")


def to_terminal(result: ScanResult, *, verbose: bool = False, colour: bool = False,
                header: Iterable[str] = (), device: str = "cuda", footer: Iterable[str] = (),
                gate_failures: int = 0) -> str:
    """The text report; ``footer``: the project's lines on unread files and unused allows.
    Every name from the tree passes :func:`~vllm_syncgate.escaping.terminal` first, so a file
    name cannot carry a newline or an escape sequence onto the screen."""
    result = each_text(result, terminal)

    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if colour else text

    out = [paint(_DIM, terminal(line)) for line in header]
    shown = [s for s in sites(result.findings) if verbose or s.gates]
    for site in shown:
        first = site.first
        guards = sorted({f.guard for f in site.findings if not f.gates})
        mark = paint(_RED, "FAIL") if site.gates else paint(_GREEN, f"ok ({', '.join(guards)})")
        out.append(f"{paint(_BOLD, f'{first.file}:{first.line}:')} {first.kind} "
                   f"{paint(_YELLOW, first.api)} in {first.qualname}  {mark}")
        out.append(f"  {first.line:>5} | {first.code}")
        out.append(f"  entry points ({len(site.entries)}): {', '.join(site.entries)}")
        out.append(f"  path: {' -> '.join(first.path)}")
        out += [f"  when: {condition}" for condition in first.conditions]
        reasons = sorted({f.reason for f in site.findings if f.reason})
        out += [f"  {'allowed' if not site.gates else 'note'}: {reason}" for reason in reasons]
        if site.gates:
            fix = fix_lines(first.symbol, first.kind, inline=True, device=device,
                            upload=first.upload)
            out += [f"  {paint(_GREEN, line) if line.startswith('fix') else line}" for line in fix]
        out.append("")
    counts = Counts.of(result)
    hidden = counts.sites - len(shown)
    tail = f"; {hidden} guarded, allowed or known site(s) not shown (-v shows them)" if hidden else ""
    verdict = paint(_RED if counts.failing_sites or gate_failures else _GREEN,
                    counts.line(gate_failures))
    out.append(f"{verdict}{tail}")
    out.append(f"{result.files} files, {result.lines} lines, {len(result.entries)} entry points")
    out += [terminal(line) for line in footer]
    return "\n".join(out)

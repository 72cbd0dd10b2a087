"""``syncgate scan``: guard-aware static scan of runner sources for per-step host-device syncs."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from syncgate.audit.budgets import AllowRule, builtin_budget_path, load_budgets
from syncgate.errors import BudgetError, ReportDirError
from syncgate.scan.callgraph import scan
from syncgate.scan.report import FORMATS, to_text

HELP = "statically scan runner sources for syncs reachable from per-step entry points"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to scan")
    parser.add_argument(
        "--entry", action="append", default=[], metavar="CLASS.METHOD",
        help="entry point (repeatable; 'method' alone means every runner class); "
        "default: the per-step methods in syncgate/scan/defaults.toml",
    )
    parser.add_argument("--budget", metavar="FILE",
                        help="budget TOML whose non-speculative allow-lists apply")
    parser.add_argument("--profile", default="cuda",
                        help="built-in budget to take allow-lists from when --budget is not "
                        "given (default: cuda)")
    parser.add_argument("--format", choices=sorted(FORMATS), default="text")
    parser.add_argument("--output", metavar="FILE", help="write the report here (default: stdout)")
    parser.add_argument("--failing-only", action="store_true",
                        help="text format: only the syncs that fail the gate")


def run(args: argparse.Namespace) -> int:
    allow = _allow_rules(args.budget, args.profile)
    result = scan(args.paths, entries=args.entry, allow=allow)
    for warning in result.warnings:
        print(f"syncgate scan: warning: {warning}", file=sys.stderr)
    for problem in result.problems:
        print(f"syncgate scan: warning: {problem.file}: {problem.reason}", file=sys.stderr)
    for skipped in result.skipped:
        print(f"syncgate scan: skipped {skipped.file}: {skipped.reason}", file=sys.stderr)
    if args.format == "text":
        report = to_text(result, show_guarded=not args.failing_only)
    else:
        report = FORMATS[args.format](result)
    if args.output:
        _write_atomically(Path(args.output), report + "\n")
    else:
        sys.stdout.write(report + "\n")
    return result.exit_code


def _allow_rules(budget: str | None, profile: str) -> list[AllowRule]:
    """Allow rules of the non-speculative budgets: the scan protects the non-speculative loop."""
    if budget is None:
        try:
            path = builtin_budget_path(profile)
        except BudgetError as exc:
            print(f"syncgate scan: warning: {exc}; scanning without an allow-list",
                  file=sys.stderr)
            return []
    else:
        path = Path(budget)
    return list(load_budgets(path).all_allow_rules(speculation=False))


def _write_atomically(path: Path, text: str) -> None:
    """Never leave a half-written report: write a sibling temp file, then rename it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as exc:
        raise ReportDirError(f"{path}: cannot write the report ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

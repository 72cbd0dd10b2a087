"""``syncgate scan``: guard-aware static scan of runner sources for per-step host-device syncs."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

from syncgate.audit.budgets import AllowRule, builtin_budget_path, load_budgets
from syncgate.reportfiles import write_all
from syncgate.scan.callgraph import scan
from syncgate.scan.report import FORMATS, to_text
from syncgate.scan.sources import FileBudget

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
    budget = FileBudget()
    parser.add_argument("--max-file-bytes", type=_positive(int), default=budget.max_bytes,
                        help="skip (with a warning) a file larger than this (default %(default)s)")
    parser.add_argument("--max-file-depth", type=_positive(int), default=budget.max_depth,
                        help="skip a file whose syntax nests deeper (default %(default)s)")
    parser.add_argument("--max-file-seconds", type=_positive(float), default=budget.max_seconds,
                        help="skip a file that takes longer to read and parse (default %(default)s)")


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    def parse(value: str) -> float:
        try:
            number = kind(value)
        except ValueError:
            number = 0
        if not math.isfinite(number) or number <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
        return number

    return parse


def run(args: argparse.Namespace) -> int:
    allow = _allow_rules(args.budget, args.profile)
    result = scan(args.paths, entries=args.entry, allow=allow,
                  budget=FileBudget(args.max_file_bytes, args.max_file_depth,
                                    args.max_file_seconds))
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
        output = Path(args.output)
        write_all(output.parent, {output.name: report + "\n"})
    else:
        sys.stdout.write(report + "\n")
    return result.exit_code


def _allow_rules(budget: str | None, profile: str) -> list[AllowRule]:
    """Allow rules of the non-speculative budgets: the scan protects the non-speculative loop."""
    # an unknown --profile is a BudgetError (exit 2), not a warning and a gate without allow-list
    path = builtin_budget_path(profile) if budget is None else Path(budget)
    return list(load_budgets(path).all_allow_rules(speculation=False))

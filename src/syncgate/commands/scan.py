"""``syncgate scan``: guard-aware static scan of runner sources for per-step host-device syncs."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

from syncgate.audit.budgets import AllowRule, builtin_budget_path, load_budgets
from syncgate.commands.flags import deprecation
from syncgate.profiles import DEVICES, load_profile
from syncgate.reportfiles import write_all
from syncgate.scan.callgraph import scan
from syncgate.scan.report import FORMATS, to_text
from syncgate.scan.sources import FileBudget

HELP = "statically scan runner sources for syncs reachable from per-step entry points"

EXAMPLES = """
  syncgate scan vllm/v1/worker                       # your vLLM branch; seconds, no GPU
  syncgate scan vllm_ascend/worker vllm/v1/worker --device npu
  syncgate scan vllm/v1/worker --budget my-budget.toml  # extends = "cuda" + your allow rules
  syncgate scan vllm/v1/worker --format github       # annotations in a GitHub Actions step
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to scan")
    parser.add_argument(
        "--entry", action="append", default=[], metavar="CLASS.METHOD",
        help="entry point (repeatable; 'method' alone means every runner class); "
        "default: the per-step methods in syncgate/scan/defaults.toml",
    )
    parser.add_argument("--budget", metavar="FILE",
                        help="budget TOML whose non-speculative allow-lists apply (default: the "
                        "budget of --profile, else of --device)")
    parser.add_argument("--device", choices=DEVICES, default="cuda",
                        help="device profile whose built-in budget's allow-lists apply; the scan "
                        "reads code written for that device, whatever this machine has")
    parser.add_argument("--profile", metavar="FILE",
                        help="profile TOML whose budget file's allow-lists apply")
    parser.add_argument("--format", choices=sorted(FORMATS), default="text",
                        help="report format")
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
    allow = _allow_rules(args.budget, *_profile_or_device(args))
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


def _profile_or_device(args: argparse.Namespace) -> tuple[str | None, str]:
    """``--profile cuda`` (a device name, as before 0.1.1) is ``--device cuda``, with a warning."""
    if args.profile in DEVICES and not Path(args.profile).exists():
        print(deprecation("syncgate scan", f"--profile {args.profile}", f"--device {args.profile}"),
              file=sys.stderr)
        return None, args.profile
    return args.profile, args.device


def _allow_rules(budget: str | None, profile: str | None, device: str) -> list[AllowRule]:
    """Allow rules of the non-speculative budgets: the scan protects the non-speculative loop."""
    # an unknown --profile is a ProfileError (exit 2), not a warning and a gate without allow-list
    if budget is not None:
        path = Path(budget)
    elif profile is not None:
        path = load_profile(profile).budget_file
    else:
        path = builtin_budget_path(device)
    return list(load_budgets(path).all_allow_rules(speculation=False))

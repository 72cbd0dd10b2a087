"""``syncgate scan``: guard-aware static scan of runner sources for per-step host-device syncs."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

from vllm_syncgate.ci_summary import append_summary, summary_path
from vllm_syncgate.commands.flags import deprecation
from vllm_syncgate.errors import EXIT_OK
from vllm_syncgate.escaping import terminal
from vllm_syncgate.profiles import DEVICES
from vllm_syncgate.reportfiles import write_all
from vllm_syncgate.scan.project import ProjectScan, ScanRequest, scan_project
from vllm_syncgate.scan.report import FORMATS, to_github, to_json, to_markdown, to_sarif, to_text
from vllm_syncgate.scan.sources import FileBudget
from vllm_syncgate.scan.terminal import Counts, use_colour

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
        "default: [tool.syncgate] entry, else the per-step methods in vllm_syncgate/scan/defaults.toml",
    )
    parser.add_argument("--budget", metavar="FILE",
                        help="budget TOML whose non-speculative allow-lists apply; it may "
                        "extend a built-in one (extends = \"cuda\") (default: [tool.syncgate] "
                        "budget, else the built-in budget of --device)")
    parser.add_argument("--device", choices=DEVICES, default=None,
                        help="device whose built-in budget's allow-lists apply; the scan reads "
                        "code written for a device, whatever this machine has (default: "
                        "[tool.syncgate] device, else npu for a vllm_ascend tree, else cuda)")
    parser.add_argument("--profile", metavar="FILE",
                        help="profile TOML whose budget file's allow-lists apply")
    parser.add_argument("--baseline", metavar="FILE",
                        help="known findings (from --write-baseline): listed, not failing; new "
                        "ones still fail (default: [tool.syncgate] baseline, else none)")
    parser.add_argument("--write-baseline", metavar="FILE",
                        help="record every failing site as known in FILE and exit 0")
    parser.add_argument("--patterns", metavar="FILE",
                        help="the scan's patterns TOML: entry classes and methods, guards "
                        "(default: [tool.syncgate] patterns, else vllm_syncgate/scan/defaults.toml)")
    parser.add_argument("--format", choices=sorted(FORMATS), default="text",
                        help="report format")
    parser.add_argument("--output", metavar="FILE", help="write the report here (default: stdout)")
    parser.add_argument("--failing-only", action="store_true",
                        help="every format: only the syncs that fail the gate (text shows only "
                        "those unless -v)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="text format: also the guarded, allowed and known sites")
    parser.add_argument("--github-summary", metavar="FILE", default=None,
                        help="append a Markdown summary to FILE (default: $GITHUB_STEP_SUMMARY "
                        "when set, as in a GitHub Actions step)")
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
    profile, device = _profile_or_device(args)
    project = scan_project(ScanRequest(
        args.paths, args.entry, budget=args.budget, profile=profile, device=device,
        baseline=args.baseline, write_baseline=args.write_baseline, patterns=args.patterns,
        file_budget=FileBudget(args.max_file_bytes, args.max_file_depth, args.max_file_seconds)))
    result = project.result
    if project.settings.source is not None and args.format != "text":  # text prints it first
        print(f"syncgate scan: {terminal(project.settings.header())}", file=sys.stderr)
    for warning in result.warnings:
        print(f"syncgate scan: warning: {terminal(warning)}", file=sys.stderr)
    for problem in result.problems:
        print(f"syncgate scan: warning: {terminal(f'{problem.file}: {problem.reason}')}",
              file=sys.stderr)
    for skipped in result.skipped:
        print(f"syncgate scan: skipped {terminal(f'{skipped.file}: {skipped.reason}')}",
              file=sys.stderr)
    for entry in project.fixed:
        known = f"{entry['file']} {entry['qualname']} {entry['kind']} {entry['api']}"
        print(f"syncgate scan: fixed since the baseline: {terminal(known)}", file=sys.stderr)
    if project.baseline_written is not None:
        print(f"syncgate scan: wrote {project.baseline_written} known failing site(s) to "
              f"{args.write_baseline}", file=sys.stderr)
        return EXIT_OK
    job_summary = summary_path(args.github_summary)
    if job_summary is not None:
        append_summary(job_summary, to_markdown(result))
    report = _render(args, project)
    if args.output:
        output = Path(args.output)
        write_all(output.parent, {output.name: report + "\n"})
        print(f"syncgate scan: wrote {args.output} ({Counts.of(result).line()})", file=sys.stderr)
    else:
        sys.stdout.write(report + "\n")
    return result.exit_code


def _render(args: argparse.Namespace, project: ProjectScan) -> str:
    result, settings = project.result, project.settings
    if args.format == "json":
        where = None if settings.source is None else {"source": str(settings.source),
                                                       "values": settings.values}
        return to_json(result, failing_only=args.failing_only, settings=where, device=project.device)
    if args.format == "sarif":
        return to_sarif(result, failing_only=args.failing_only, device=project.device)
    if args.format == "github":
        return to_github(result, device=project.device)
    header = [settings.header()] if settings.source is not None else []
    return to_text(result, failing_only=args.failing_only, verbose=args.verbose,
                   colour=not args.output and use_colour(sys.stdout),
                   header=[*header, f"budget: {project.budget}"] if args.verbose else header,
                   device=project.device)


def _profile_or_device(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """``--profile cuda`` (a device name, as before 0.1.1) is ``--device cuda``, with a warning."""
    if args.profile in DEVICES and not Path(args.profile).exists():
        print(deprecation("syncgate scan", f"--profile {args.profile}", f"--device {args.profile}"),
              file=sys.stderr)
        return None, args.profile
    return args.profile, args.device

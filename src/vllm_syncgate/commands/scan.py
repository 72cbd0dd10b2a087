"""``syncgate scan``: guard-aware static scan of runner sources for per-step host-device syncs."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

from vllm_syncgate.ci_summary import append_summary, summary_path
from vllm_syncgate.commands.flags import deprecation
from vllm_syncgate.errors import EXIT_OK
from vllm_syncgate.escaping import terminal
from vllm_syncgate.profiles import DEVICES
from vllm_syncgate.reportfiles import write_all
from vllm_syncgate.scan.memory import left_to_exit
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
    parser.add_argument("--strict", action="store_true",
                        help="gate mode: also fail (exit 1) on a file that could not be read or "
                        "parsed (unless excluded with a reason) and on an allow rule, inline "
                        "allow or baseline entry that matched nothing")
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
    # as the process's own command, the scan's garbage is left to the exit (scan/memory.py)
    with left_to_exit() if getattr(args, "process_command", False) else nullcontext():
        project = scan_project(ScanRequest(
            args.paths, args.entry, budget=args.budget, profile=profile, device=device,
            baseline=args.baseline, write_baseline=args.write_baseline, patterns=args.patterns,
            file_budget=FileBudget(args.max_file_bytes, args.max_file_depth,
                                   args.max_file_seconds),
            strict=args.strict))
    result = project.result
    if args.format != "text":  # text prints them first
        for line in project.header():
            print(f"syncgate scan: {terminal(line)}", file=sys.stderr)
    for warning in result.warnings:
        print(f"syncgate scan: warning: {terminal(warning)}", file=sys.stderr)
    for line in project.verdict_lines():  # unread files, exclusions, unused allows
        print(f"syncgate scan: {terminal(line)}", file=sys.stderr)
    if project.baseline_written is not None:
        print(f"syncgate scan: wrote {project.baseline_written} known failing site(s) to "
              f"{args.write_baseline}", file=sys.stderr)
        return EXIT_OK
    job_summary = summary_path(args.github_summary)
    if job_summary is not None:
        append_summary(job_summary, to_markdown(result, project))
    report = _render(args, project)
    if args.output:
        output = Path(args.output)
        write_all(output.parent, {output.name: report + "\n"})
        verdict = Counts.of(result).line(len(project.gate_failures))
        print(f"syncgate scan: wrote {args.output} ({verdict})", file=sys.stderr)
    else:
        sys.stdout.write(report + "\n")
    return project.exit_code


def _render(args: argparse.Namespace, project: ProjectScan) -> str:
    result = project.result
    if args.format == "json":
        return to_json(result, failing_only=args.failing_only, project=project, device=project.device)
    if args.format == "sarif":
        return to_sarif(result, failing_only=args.failing_only, device=project.device)
    if args.format == "github":
        return to_github(result, device=project.device, project=project)
    return to_text(result, failing_only=args.failing_only, verbose=args.verbose,
                   colour=not args.output and use_colour(sys.stdout), header=project.header(),
                   device=project.device, project=project)


def _profile_or_device(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """``--profile cuda`` (a device name, as before 0.1.1) is ``--device cuda``, with a warning."""
    if args.profile in DEVICES and not Path(args.profile).exists():
        print(deprecation("syncgate scan", f"--profile {args.profile}", f"--device {args.profile}"),
              file=sys.stderr)
        return None, args.profile
    return args.profile, args.device

"""``syncgate repro``: a failing CI log in, a local verdict per test out.

Thin shell over :mod:`vllm_syncgate.repro`: parse the log, validate node ids against the local tree,
rerun (locally or inside a compose service / image), classify, report.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from vllm_syncgate.environment import header_differences, local_versions
from vllm_syncgate.errors import EXIT_OK, UsageError
from vllm_syncgate.lifeline import signals_as_interrupt
from vllm_syncgate.reportfiles import printable
from vllm_syncgate.repro.logs import LogLimits, parse_log
from vllm_syncgate.repro.report import ReproReport, to_terminal, write_reports
from vllm_syncgate.repro.reproduce import RerunConfig, reproduce
from vllm_syncgate.repro.runner import LocalRunner, Runner, remove_stale_temp_dirs
from vllm_syncgate.repro.stats import runs_needed

HELP = "rerun the tests a CI log says failed; verdict: broken, flaky, order-dependent, ..."

EXAMPLES = """
  gh run view 123456 --log-failed > ci.log
  syncgate repro ci.log --list                         # what failed (runs nothing)
  syncgate repro ci.log --replay-order --report-dir out/
  syncgate repro ci.log --in repro --workdir /workspace  # inside the CI image
"""


def _workers(value: str) -> int:
    if value == "auto":
        return os.cpu_count() or 1
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {value!r}") from None


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return seconds


def _size(value: str) -> int:
    """A positive byte or character count, with an optional K, M or G (binary) suffix."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(value[-1:].lower(), 1)
    digits = value[:-1] if scale > 1 else value
    if not digits.isdigit() or int(digits) == 0:
        raise argparse.ArgumentTypeError(f"expected a positive size like 512M, got {value!r}")
    return int(digits) * scale


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("log", type=Path, help="CI log: GitHub job log, gh --log output, run-log "
                        "zip, pytest output, JUnit XML or pytest-reportlog JSONL")
    parser.add_argument("--list", action="store_true",
                        help="print the failed and errored node ids, one per line; run nothing")
    parser.add_argument("--runs", type=int, default=None,
                        help="reruns per test (default: enough to rule out --target-rate)")
    parser.add_argument("--target-rate", type=float, default=0.05,
                        help="flake rate that 0 failures must rule out (default 0.05 -> 59 runs)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="confidence of the flake-rate interval and of --target-rate")
    parser.add_argument("--interval", choices=("wilson", "exact"), default="wilson",
                        help="interval for flake rates: Wilson or Clopper-Pearson (exact) "
                        "(default: %(default)s)")
    parser.add_argument("--workers", "-n", type=_workers, default=_workers("auto"),
                        help="parallel pytest-xdist workers (default: auto = CPU count)")
    parser.add_argument("--no-early-stop", dest="early_stop", action="store_false",
                        help="always do every run, even once a verdict is settled")
    parser.add_argument("--broken-after", type=int, default=10,
                        help="failing this many first runs in a row settles 'broken' early "
                        "(default: %(default)s)")
    parser.add_argument("--replay-order", action="store_true",
                        help="rerun tests that pass alone after their CI predecessors")
    parser.add_argument("--replay-runs", type=int, default=3,
                        help="with --replay-order: reruns of each test after its CI predecessors")
    parser.add_argument("--seed", type=int, default=None,
                        help="pytest-randomly seed (default: the one in the log, if any)")
    parser.add_argument("--rootdir", type=Path, default=Path.cwd(),
                        help="project root the log's node ids are relative to (default: cwd)")
    parser.add_argument("--in", dest="service", metavar="SERVICE",
                        help="rerun inside a running compose service's container, or an image")
    parser.add_argument("--workdir", default=None,
                        help="with --in: the test tree's directory inside the container "
                        "(default: the container's working directory)")
    parser.add_argument("--python", default="python3",
                        help="with --in: the Python inside the container (default python3)")
    parser.add_argument("--report-dir", type=Path, default=None,
                        help="write report.md, report.json and junit.xml here (default: none, "
                        "terminal only)")
    parser.add_argument("--timeout", type=_seconds, default=None,
                        help="seconds one pytest session may run before it is killed "
                        "(default: no limit)")
    parser.add_argument("--max-log-bytes", type=_size, default=LogLimits.max_bytes,
                        help="read at most this much of the log, after decompression "
                             "(default 2G); more is an error")
    parser.add_argument("--max-line-length", type=_size, default=LogLimits.max_line,
                        help="cut log lines after this many characters (default 1M)")


def _runner(args: argparse.Namespace) -> Runner:
    if args.service:
        from vllm_syncgate.repro.container import DockerRunner

        return DockerRunner.connect(args.service, args.workdir, python=args.python,
                                    timeout=args.timeout)
    if not args.rootdir.is_dir():
        raise UsageError(f"--rootdir {args.rootdir}: not a directory")
    return LocalRunner(args.rootdir.resolve(), timeout=args.timeout)


def run(args: argparse.Namespace) -> int:
    config = RerunConfig(runs=args.runs, target_rate=args.target_rate,
                         confidence=args.confidence, workers=args.workers,
                         early_stop=args.early_stop, broken_after=args.broken_after,
                         replay_order=args.replay_order, replay_runs=args.replay_runs,
                         interval=args.interval)
    config.validate()
    log = parse_log(args.log, LogLimits(args.max_log_bytes, args.max_line_length))
    if args.list:
        for nodeid in log.failed_nodeids():
            print(printable(nodeid))
        if not log.failures:
            print(f"syncgate repro: {args.log}: no failed or errored tests", file=sys.stderr)
        return EXIT_OK
    config.seed = args.seed if args.seed is not None else log.seed
    remove_stale_temp_dirs()
    with signals_as_interrupt():
        runner = _runner(args)
        try:
            verdicts = reproduce(log, runner, config) if log.failures else []
        finally:
            close = getattr(runner, "close", None)
            if close is not None:
                close()
    differences = header_differences(log.env or {}, local_versions()) if not args.service else {}
    report = ReproReport(log, verdicts, runner.description,
                         args.runs or runs_needed(args.target_rate, args.confidence),
                         args.confidence, differences)
    sys.stdout.write(to_terminal(report))
    if args.report_dir is not None:
        for path in write_reports(report, args.report_dir):
            print(f"  wrote {path}")
    return report.exit_code

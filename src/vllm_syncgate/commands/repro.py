"""``syncgate repro``: a failing CI log in, a local verdict per test out.

Thin shell over :mod:`vllm_syncgate.repro`: parse the log, validate node ids against the local tree,
rerun (locally or inside a compose service / image), classify, report. ``--shard I/N`` does one
CI job's share and writes a shard file; ``syncgate repro merge SHARD...`` joins them.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

from vllm_syncgate.environment import header_differences, local_versions
from vllm_syncgate.errors import EXIT_OK, UsageError
from vllm_syncgate.lifeline import signals_as_interrupt
from vllm_syncgate.reportfiles import printable
from vllm_syncgate.repro.logs import LogLimits, parse_log
from vllm_syncgate.repro.report import ReproReport, to_terminal, write_reports
from vllm_syncgate.repro.reproduce import RerunConfig, reproduce
from vllm_syncgate.repro.runner import LocalRunner, Runner, remove_stale_temp_dirs
from vllm_syncgate.repro.shardfile import (
    merge,
    runner_header,
    shard_document,
    version_fields,
    write_shard,
)
from vllm_syncgate.repro.shards import Shard, log_digest, parse_shard, shard_from_env
from vllm_syncgate.repro.stats import runs_needed

HELP = "rerun the tests a CI log says failed; verdict: broken, flaky, order-dependent, ..."

EXAMPLES = """
  gh run view 123456 --log-failed > ci.log
  syncgate repro ci.log --list                         # what failed (runs nothing)
  syncgate repro ci.log --replay-order --report-dir out/
  syncgate repro ci.log --in repro --workdir /workspace  # inside the CI image
  syncgate repro ci.log --shard 2/4 --report-dir shards/  # one CI job's share
  syncgate repro merge shards/ --report-dir out/         # one verdict from all shards
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
    if not (digits.isascii() and digits.isdigit()) or int(digits) == 0:
        raise argparse.ArgumentTypeError(f"expected a positive size like 512M, got {value!r}")
    return int(digits) * scale


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = ("%(prog)s [options] LOG\n       %(prog)s merge SHARD_FILE_OR_DIR... "
                    "[--report-dir DIR]")
    parser.add_argument("log", type=Path, nargs="+", metavar="LOG",
                        help="CI log: GitHub job log, gh --log output, run-log zip, pytest "
                        "output, JUnit XML or pytest-reportlog JSONL; or 'merge' and then shard "
                        "files or directories holding them")
    parser.add_argument("--list", action="store_true",
                        help="print the failed and errored node ids, one per line; run nothing")
    parser.add_argument("--runs", type=int, default=None,
                        help="reruns per test (default: enough to rule out --target-rate)")
    parser.add_argument("--target-rate", type=float, default=0.05,
                        help="flake rate that 0 failures must rule out (default 0.05 -> 59 runs)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="confidence of the flake-rate interval and of --target-rate")
    parser.add_argument("--interval", choices=("wilson", "exact"), default=RerunConfig.interval,
                        help="interval for flake rates: Wilson or Clopper-Pearson (exact) "
                        "(default: %(default)s)")
    parser.add_argument("--workers", "-n", type=_workers, default=_workers("auto"),
                        help="parallel pytest-xdist workers (default: auto = CPU count)")
    parser.add_argument("--no-early-stop", dest="early_stop", action="store_false",
                        help="always do every run, even once a verdict is settled")
    parser.add_argument("--broken-after", type=int, default=RerunConfig.broken_after,
                        help="failing this many first runs in a row settles 'broken' early "
                        "(default: %(default)s)")
    parser.add_argument("--min-runs", type=int, default=RerunConfig.min_runs,
                        help="a test that passed and failed stops early only after this many "
                        "runs, so no rate comes from fewer (default: %(default)s)")
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
    parser.add_argument("--shard", metavar="I/N|auto", default=None,
                        help="run only shard I of N (1-based) of the reruns, no early stop, and "
                        "write repro-shard-I-of-N.json into --report-dir (default: cwd); auto: "
                        "$SYNCGATE_SHARD=I/N, Buildkite's BUILDKITE_PARALLEL_JOB(_COUNT) or a "
                        "Kubernetes Indexed Job's JOB_COMPLETION_INDEX")
    parser.add_argument("--shard-count", type=int, default=None,
                        help="with --shard auto in a Kubernetes Indexed Job: its completions "
                        "(default: $SYNCGATE_SHARD_COUNT)")
    parser.add_argument("--record-env", action="append", default=[], metavar="NAME",
                        help="with --shard: keep this environment variable's value in the "
                        "shard's header (repeatable; also $SYNCGATE_RECORD_ENV=A,B); every "
                        "other variable is recorded by name only")
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


def _shard(args: argparse.Namespace) -> Shard | None:
    if args.shard is None:
        if args.shard_count is not None:
            raise UsageError("--shard-count needs --shard auto")
        return None
    if args.shard_count is not None and args.shard_count < 1:
        raise UsageError(f"--shard-count must be at least 1, got {args.shard_count}")
    if args.shard == "auto":
        return shard_from_env(os.environ, args.shard_count)
    return parse_shard(args.shard)


def run(args: argparse.Namespace) -> int:
    if str(args.log[0]) == "merge":
        return _merge(args.log[1:], args)
    if len(args.log) != 1:
        raise UsageError(f"expected one LOG, or 'merge SHARD...', got {len(args.log)} paths")
    path = args.log[0]
    shard = _shard(args)
    config = RerunConfig(runs=args.runs, target_rate=args.target_rate,
                         confidence=args.confidence, workers=args.workers,
                         early_stop=args.early_stop, broken_after=args.broken_after,
                         min_runs=args.min_runs, replay_order=args.replay_order,
                         replay_runs=args.replay_runs, interval=args.interval, shard=shard)
    config.validate()
    log = parse_log(path, LogLimits(args.max_log_bytes, args.max_line_length))
    if args.list:
        for nodeid in log.failed_nodeids():
            print(printable(nodeid))
        if not log.failures:
            print(f"syncgate repro: {path}: no failed or errored tests", file=sys.stderr)
        return EXIT_OK
    if shard is not None:
        config.shard_key = log_digest(path)
    config.seed = (args.seed if args.seed is not None else
                   shard.seed(config.shard_key) if shard is not None else log.seed)
    remove_stale_temp_dirs()
    started = time.monotonic()
    with signals_as_interrupt():
        runner = _runner(args)
        try:
            verdicts = reproduce(log, runner, config) if log.failures else []
        finally:
            close = getattr(runner, "close", None)
            if close is not None:
                close()
    if shard is not None:
        settings = {"runs": config.resolved_runs(), "confidence": config.confidence,
                    "interval": config.interval, "replay_order": config.replay_order,
                    "replay_runs": config.replay_runs}
        document = shard_document(shard, log, config.shard_key, settings,
                                  runner_header(args.record_env), runner.description, verdicts,
                                  time.monotonic() - started)
        written = write_shard(args.report_dir or Path.cwd(), shard, document)
        done = sum(len(v.runs) + len(v.replays) for v in verdicts)
        print(f"syncgate repro: shard {shard.label}: {done} runs of {len(verdicts)} tests "
              f"in {runner.description}; wrote {written}")
        print(f"  the verdict comes from: syncgate repro merge {written.parent}/")
        return EXIT_OK
    differences = header_differences(log.env or {}, local_versions()) if not args.service else {}
    report = ReproReport(log, verdicts, runner.description,
                         args.runs or runs_needed(args.target_rate, args.confidence),
                         args.confidence, differences)
    return _print(report, args.report_dir)


def _merge(paths: list[Path], args: argparse.Namespace) -> int:
    if not paths:
        raise UsageError("repro merge: name at least one shard file or directory")
    merged = merge(paths)
    first = merged.headers[min(merged.headers)]
    differences = header_differences(merged.log.env or {}, version_fields(first))
    report = ReproReport(merged.log, merged.verdicts, merged.where, merged.runs,
                         merged.confidence, differences, merged.notes)
    return _print(report, args.report_dir)


def _print(report: ReproReport, report_dir: Path | None) -> int:
    sys.stdout.write(to_terminal(report))
    if report_dir is not None:
        for path in write_reports(report, report_dir):
            print(f"  wrote {path}")
    return report.exit_code

"""`syncgate repro` speed: log parsing and parallel reruns (issue targets: <= 3 s, <= 0.6x).

1. Parse a 50 MB raw GitHub job log (timestamps, ANSI colours, an xdist ``-v`` run with a failure
   every 1000 tests and a log line after each test) in a fresh process: wall seconds and how far
   peak RSS grew while parsing (streaming keeps it flat however big the log is).
2. 59 reruns of a 0.5 s test on 2 workers, side by side in one run:
   - ``pytest-repeat``: ``pytest --count 59`` in one process (the sequential baseline);
   - ``syncgate repro``: one xdist session that validates (collects the named files) and runs
     59 copies (the engine, timed
     in-process; the CLI's own start-up is not counted, it imports every subcommand).
   Same test (``case_slow.py::test_sleeps`` of the synthetic suite, ``SUITE_SLEEP=0.5``), same
   interpreter, rounds alternated so machine noise hits both. A third row, pytest-repeat spread
   over the same xdist workers, is context: xdist's own start-up and scheduling cost here.

Run: .venv/bin/python benchmarks/bench_repro.py [--megabytes 50] [--runs 59] [--rounds 1]
(writes benchmarks/results/repro.json)
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _table import emit

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "data" / "repro" / "suite"
TARGET = "case_slow.py::test_sleeps"

PARSE_SCRIPT = r"""
import resource, sys, time
from vllm_syncgate.repro.logs import parse_log
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start, cpu = time.perf_counter(), time.process_time()
log = parse_log(sys.argv[1])
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
print(len(log.failures), log.tests_seen, elapsed,
      (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024, cpu)
"""

# The rerun side, timed inside one process that imports only vllm_syncgate.repro: the xdist session
# that validates and reruns, exactly what `syncgate repro` does after parsing.
RERUN_SCRIPT = r"""
import sys, time
from pathlib import Path
from vllm_syncgate.repro.reproduce import RerunConfig, reproduce
from vllm_syncgate.repro.logs import parse_log
from vllm_syncgate.repro.runner import LocalRunner
log = parse_log(sys.argv[1])
start = time.perf_counter()
verdicts = reproduce(log, LocalRunner(Path.cwd()),
                     RerunConfig(runs=int(sys.argv[2]), workers=int(sys.argv[3])))
print(f"{time.perf_counter() - start} runs={len(verdicts[0].runs)} {verdicts[0].verdict.value}")
"""

# pytest-repeat, timed the same way: from process start of pytest to its end.
REPEAT_SCRIPT = r"""
import subprocess, sys, time
start = time.perf_counter()
done = subprocess.run([sys.executable, "-m", "pytest", *sys.argv[1:]], capture_output=True,
                      text=True)
print(f"{time.perf_counter() - start} {done.stdout.strip().splitlines()[-1]}")
"""


def write_big_log(path: Path, megabytes: float) -> int:
    """A raw GitHub log of ``megabytes`` MB; returns how many test result lines it holds."""
    ts = "2026-04-25T05:18:16.2685185Z "
    tests = 0
    with path.open("w", encoding="utf-8") as out:
        out.write(ts + "Using --randomly-seed=99\n")
        buf = io.StringIO()
        while out.tell() < megabytes * 1024 * 1024:
            for _ in range(1000):
                outcome = "FAILED" if tests % 1000 == 999 else "PASSED"
                buf.write(f"{ts}[gw{tests % 4}] [ 50%] \x1b[32m{outcome}\x1b[0m "
                          f"tests/e2e/test_m{tests % 97}.py::test_case[p{tests}-ü x] \n")
                buf.write(f"{ts}INFO 04-25 05:18:16 [engine.py:123] step {tests} done\n")
                tests += 1
            out.write(buf.getvalue())
            buf.seek(0)
            buf.truncate()
        out.write(ts + f"==== {tests // 1000} failed, {tests - tests // 1000} passed in 9.00s ====\n")
    return tests


def parse_once(path: Path) -> tuple[int, int, float, int, float]:
    out = subprocess.run([sys.executable, "-c", PARSE_SCRIPT, str(path)], check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1]), float(out[2]), int(out[3]), float(out[4])


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Run a timing script; it prints its own seconds first, then what it did."""
    done = subprocess.run(argv, cwd=SUITE, env=env, capture_output=True, text=True, check=False)
    first, _, rest = done.stdout.strip().partition(" ")
    try:
        return float(first), rest
    except ValueError:
        raise SystemExit(f"timing failed: {done.stdout[-1500:]}{done.stderr[-1500:]}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=50)
    parser.add_argument("--runs", type=int, default=59)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sleep", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    rows = []

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp, "job.txt")
        tests = write_big_log(log, args.megabytes)
        size_mb = log.stat().st_size / 2**20
        parses = [parse_once(log) for _ in range(max(1, args.rounds))]
        failures, seen = parses[0][0], parses[0][1]
        if (failures, seen) != (tests // 1000, tests):
            raise SystemExit(f"parse found {failures} failures in {seen} tests; wrote "
                             f"{tests // 1000} in {tests}")
        parse_s = statistics.median(p[2] for p in parses)
        parse_cpu = statistics.median(p[4] for p in parses)
        growth = max(p[3] for p in parses)
        rows.append({"case": f"parse {size_mb:.0f} MB GitHub log", "seconds": parse_s,
                     "cpu seconds": parse_cpu, "MB/s": size_mb / parse_s,
                     "peak RSS growth MB": growth})

        ci_log = Path(tmp, "ci.txt")
        ci_log.write_text(f"FAILED {TARGET} - AssertionError\n==== 1 failed in 1.00s ====\n")
        env = dict(os.environ, SUITE_SLEEP=str(args.sleep))
        repeat_base = [sys.executable, "-c", REPEAT_SCRIPT, "-q", "-p", "no:cacheprovider",
                       "-p", "no:randomly", "--count", str(args.runs)]
        repeat_argv = [*repeat_base, "-p", "no:xdist", TARGET]
        repro_argv = [sys.executable, "-c", RERUN_SCRIPT, str(ci_log), str(args.runs),
                      str(args.workers)]
        # Context only: pytest-repeat spread over the same xdist workers shows what xdist's own
        # start-up and scheduling cost on this machine (no validation, no verdicts).
        xdist_argv = [*repeat_base, "-n", str(args.workers), TARGET]
        times: dict[str, list[float]] = {"pytest-repeat": [], "syncgate repro": [],
                                         "pytest-repeat + xdist (context)": []}
        for _ in range(args.rounds):
            for name, argv in (("pytest-repeat", repeat_argv), ("syncgate repro", repro_argv),
                               ("pytest-repeat + xdist (context)", xdist_argv)):
                seconds, output = timed(argv, env)
                expected = (f"runs={args.runs} not-reproduced" if name == "syncgate repro"
                            else f"{args.runs} passed")
                if expected not in output:
                    raise SystemExit(f"{name} did not do {args.runs} runs:\n{output[-2000:]}")
                times[name].append(seconds)
        for name, values in times.items():
            rows.append({"case": f"{args.runs} reruns of a {args.sleep} s test: {name}",
                         "seconds": statistics.median(values), "cpu seconds": None,
                         "MB/s": None, "peak RSS growth MB": None})

    repeat_s = statistics.median(times["pytest-repeat"])
    repro_s = statistics.median(times["syncgate repro"])
    emit("repro", rows, {
        "parse_seconds": parse_s, "parse_cpu_seconds": parse_cpu, "parse_target_seconds": 3.0,
        "parse_peak_rss_growth_mb": growth,
        "rerun_ratio_repro_vs_repeat": repro_s / repeat_s, "rerun_target_ratio": 0.6,
        "workers": args.workers, "cpus": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],
    })


if __name__ == "__main__":
    main()

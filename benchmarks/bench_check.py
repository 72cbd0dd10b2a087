"""`syncgate check --device cpu` end to end after install (issue target: <= 120 s on this machine).

Runs the real command in a subprocess with a fresh model cache (so the model build is included),
then reads the breakdown the command itself recorded in report.json: model build, each server's
start-up, each scenario group's wall time, and the HF reference left after the last server.
The load average before and after is printed because the machine's CPUs are shared.

Run: .venv/bin/python benchmarks/bench_check.py [--keep-cache] [extra syncgate check args]
     (writes benchmarks/results/check.json)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import emit

TARGET_S = 120.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep-cache", action="store_true",
                        help="reuse the machine's model cache (measures a warm run)")
    args, extra = parser.parse_known_args()
    report = Path(tempfile.mkdtemp(prefix="syncgate-bench-check-"))
    env = dict(os.environ)
    if not args.keep_cache:
        env["SYNCGATE_CACHE_DIR"] = str(report / "cache")
    load_before = os.getloadavg()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "syncgate.cli", "check", "--device", "cpu",
         "--report-dir", str(report / "report"), *extra],
        env=env, capture_output=True, text=True,
    )
    wall = time.monotonic() - started
    load_after = os.getloadavg()
    data = json.loads((report / "report" / "report.json").read_text())
    rows = [{"phase": phase, "seconds": seconds} for phase, seconds in data["timings_s"].items()]
    rows.append({"phase": "wall (subprocess)", "seconds": round(wall, 2)})
    peak = max((g["peak_rss_bytes"] for g in data["groups"]), default=0)
    summary = {
        "exit_code": done.returncode,
        "passed": data["passed"],
        "wall_s": round(wall, 2),
        "target_s": TARGET_S,
        "within_target": wall <= TARGET_S,
        "peak_server_tree_rss_gib": round(peak / 2**30, 3),
        "cpus": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "report_dir": str(report / "report"),
    }
    emit("check", rows, summary)
    return 0 if done.returncode in (0, 1) else done.returncode


if __name__ == "__main__":
    sys.exit(main())

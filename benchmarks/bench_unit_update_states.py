"""The unit level of ``syncgate check`` before and after the ``update_states`` probe, side by side.

Each round runs ``check --levels unit --no-cache`` once with the package as it was before the
probe (``git archive`` of ``--before``, through PYTHONPATH) and once with this tree, alternating
which goes first, so machine load falls on both alike. The unit level's own time comes from
report.json (``levels.unit.duration_s``), the probe's from its case.

Run: .venv/bin/python benchmarks/bench_unit_update_states.py [--rounds 3] [--before REV]
(writes benchmarks/results/unit_update_states.json)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _revision import ROOT, before_tree
from _table import emit

PROBE_COMMIT = "20d9346"  # unit: probe update_states


def _unit_level(src: Path | None, report: Path) -> tuple[float, float, float]:
    """(wall s, unit level s, update_states probes s) of one check run."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vllm_syncgate", "check", "--levels", "unit",
                           "--no-cache", "--quiet", "--report-dir", str(report)],
                          cwd=report.parent, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"check exited {done.returncode}: {done.stdout[-500:]}{done.stderr[-500:]}")
    unit = json.loads((report / "report.json").read_text())["levels"]["unit"]
    probe = sum(c["time_s"] for c in unit["cases"] if c["name"].startswith("probes.update_states"))
    return wall, unit["duration_s"], probe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default=f"{PROBE_COMMIT}^", help="revision without the probe")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-unit-") as tmp:
        before = before_tree(args.before, Path(tmp) / "before")
        for i in range(args.rounds):
            order = [("before", before), ("after", None)]
            for name, src in order if i % 2 == 0 else order[::-1]:
                wall, unit, probe = _unit_level(src, Path(tmp) / f"r{i}-{name}")
                rows.append({"round": i + 1, "variant": name, "check_wall_s": wall,
                             "unit_level_s": unit, "update_states_probe_s": probe})
    med = {v: statistics.median(r["unit_level_s"] for r in rows if r["variant"] == v)
           for v in ("before", "after")}
    emit("unit_update_states", rows, {
        "before_rev": args.before, "median_unit_level_s_before": med["before"],
        "median_unit_level_s_after": med["after"], "ratio_after_before": med["after"] / med["before"],
        "cpus": os.cpu_count(), "load_avg_1m_at_end": os.getloadavg()[0], "root": str(ROOT)})


if __name__ == "__main__":
    main()

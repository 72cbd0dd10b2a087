"""`syncgate scan` speed on all of vLLM 0.32.0's ``vllm/v1/worker/`` (issue target: <= 5 s).

Side by side in one run, alternating rounds so machine noise hits both:
- ``parse only``: read + ``ast.parse`` of every file (the floor any ast scanner pays);
- ``full scan``: index, attribute facts, guard evaluation, call-graph search from every runner's
  entry points, findings.
Reports wall and CPU seconds (medians), lines per second, and the scan/parse ratio.

Run: .venv/bin/python benchmarks/bench_scan.py [--rounds N]   (writes benchmarks/results/scan.json)
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import statistics
import time
from pathlib import Path

from _table import emit
from syncgate.scan.callgraph import scan


def worker_dir() -> Path:
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("vllm is not installed: pip install -e .[cpu]")
    return Path(next(iter(spec.submodule_search_locations))) / "v1" / "worker"


def parse_only(root: Path) -> int:
    lines = 0
    for file in sorted(root.rglob("*.py")):
        text = file.read_text(encoding="utf-8")
        ast.parse(text, filename=str(file))
        lines += text.count("\n")
    return lines


def timed(fn, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn(*args)
    return time.perf_counter() - wall, time.process_time() - cpu, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = worker_dir()
    samples: dict[str, list[tuple[float, float]]] = {"parse only": [], "full scan": []}
    result = None
    for _ in range(args.rounds):
        wall, cpu, _lines = timed(parse_only, root)
        samples["parse only"].append((wall, cpu))
        wall, cpu, result = timed(scan, [str(root)])
        samples["full scan"].append((wall, cpu))
    assert result is not None
    rows = []
    for name, runs in samples.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        rows.append({
            "variant": name,
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "lines_per_s_cpu": int(result.lines / cpu),
        })
    scan_row = rows[1]
    emit("scan", rows, {
        "path": str(root),
        "files": result.files,
        "lines": result.lines,
        "runner_classes": len({f.runner for f in result.findings}),
        "findings": len(result.findings),
        "rounds": args.rounds,
        "scan_over_parse_cpu": round(rows[1]["cpu_s"] / rows[0]["cpu_s"], 2),
        "target_s": 5.0,
        "within_target_cpu": scan_row["cpu_s"] <= 5.0,
        "within_target_wall": scan_row["wall_s"] <= 5.0,
    })


if __name__ == "__main__":
    main()

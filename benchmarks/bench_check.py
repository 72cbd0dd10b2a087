"""`syncgate check` before and after, side by side: full and --quick, cold and warm.

"Before" is ``git archive`` of an earlier revision (default 9d3ec16, the serve level as it was)
run from a temp dir with PYTHONPATH, so the servers load that revision's audit plugin too;
"after" is this checkout. Each side gets its own fresh SYNCGATE_CACHE_DIR holding a copy of the
built embedded model (the model cache is warm, nothing else is): the first run of a side is
"cold", the one right after it "warm". Runs alternate between the sides so a change in the
machine's load hits both. "full" after runs only the serve level (``--levels serve``): the check
of the before revision was the serve level, so that is like for like. "quick" and "all" are what
a user types, ``syncgate check --quick`` and ``syncgate check``: every level (scan and unit run
while the servers boot).

For each run: wall time, the command's own total, and each group's server start (report.json
timings), with after/before ratios of the same temperature; the load average around each run,
because this machine's 2 cores are shared. The findings must not move: check.compare's
report_differences of after vs before (full) and of --quick vs full are printed and saved, next
to before vs its own second run (the noise floor of timing-dependent step counts).

Run: .venv/bin/python benchmarks/bench_check.py [--before REV] [--sides before,after]
     [--only full,quick] (writes benchmarks/results/check.json)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _revision import before_tree
from _table import emit
from vllm_syncgate.check.compare import report_differences
from vllm_syncgate.models import ensure_model, load_recipe

BEFORE = "9d3ec16"  # the serve level before issue 15 (servers one ahead, no --quick)
TARGETS_S = {"full": 120.0, "quick": 60.0}


def side_cache(model: Path, into: Path) -> Path:
    """A cache dir holding only the built model: the model cache warm, nothing else."""
    shutil.copytree(model, into / "models" / model.name)
    return into


AFTER_ARGS = {"full": ["--levels", "serve"], "quick": ["--quick"], "all": []}


def one_run(label: str, src: Path | None, cache: Path, report: Path, kind: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCGATE_")}
    env["SYNCGATE_CACHE_DIR"] = str(cache)
    argv = [sys.executable, "-m", "vllm_syncgate.cli", "check", "--device", "cpu",
            "--report", str(report)]
    if src is not None:
        env["PYTHONPATH"] = str(src)
    else:
        argv += AFTER_ARGS[kind]
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    (report.parent / f"{report.name}.stderr").write_text(done.stderr)
    if done.returncode not in (0, 1) or not (report / "report.json").exists():
        raise SystemExit(f"{label}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    data = json.loads((report / "report.json").read_text())
    timings = data.get("timings_s", {})
    print(f"{label}: {wall:.1f} s, exit {done.returncode}, load {load_before:.1f}", flush=True)
    return {
        "label": label, "exit_code": done.returncode, "passed": data.get("passed"),
        "wall_s": round(wall, 2), "total_s": timings.get("total"),
        "server_start_s": {k.split(":", 1)[1]: v for k, v in timings.items()
                           if k.startswith("server_start:")},
        "load1_before": round(load_before, 2), "load1_after": round(os.getloadavg()[0], 2),
        "report": data,
    }


def _ratio(after: float | None, before: float | None) -> float | None:
    return round(after / before, 3) if after and before else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help="revision to compare with (%(default)s)")
    parser.add_argument("--sides", default="before,after")
    parser.add_argument("--only", default="full,quick,all", help="full, quick, all")
    args = parser.parse_args()
    sides, kinds = args.sides.split(","), args.only.split(",")
    work = Path(tempfile.mkdtemp(prefix="syncgate-bench-check-"))
    model = ensure_model(load_recipe("llama"))[0].path
    srcs = {"before": before_tree(args.before, work / "before"), "after": None}
    caches = {side: side_cache(model, work / f"cache-{side}") for side in sides}
    plan = [(side, "full", temp) for temp in ("cold", "warm") for side in sides if "full" in kinds]
    if "after" in sides and "quick" in kinds:
        plan += [("after", "quick", temp) for temp in ("cold", "warm")]
    if "after" in sides and "all" in kinds:
        plan.append(("after", "all", "cold"))
    runs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for side, kind, temp in plan:
        label = f"{side} {kind} {temp}"
        runs[side, kind, temp] = one_run(label, srcs[side], caches[side],
                                         work / "reports" / label.replace(" ", "-"),
                                         kind=kind)
    rows = []
    for (side, kind, temp), run in runs.items():
        base = runs.get(("before", "full", temp))
        row = {"run": f"{side} {kind}", "temp": temp, "wall_s": run["wall_s"],
               "total_s": run["total_s"],
               "wall/before": _ratio(run["wall_s"], base and base["wall_s"]),
               "load1": run["load1_before"]}
        for group, seconds in sorted(run["server_start_s"].items()):
            row[f"start:{group}"] = seconds
            before_start = base and base["server_start_s"].get(group)
            row[f"start:{group}/before"] = _ratio(seconds, before_start)
        rows.append(row)
    columns = list(dict.fromkeys(c for r in rows for c in r))  # a group may be missing (quick)
    rows = [{c: r.get(c) for c in columns} for r in rows]
    findings = {}

    def differ(name: str, whole: tuple[str, str, str], part: tuple[str, str, str]) -> None:
        if whole in runs and part in runs:
            findings[name] = report_differences(runs[whole]["report"], runs[part]["report"])

    differ("after full vs before full (cold)", ("before", "full", "cold"), ("after", "full", "cold"))
    differ("after full vs before full (warm)", ("before", "full", "warm"), ("after", "full", "warm"))
    differ("before full: warm vs cold (noise floor)", ("before", "full", "cold"),
           ("before", "full", "warm"))
    differ("after quick vs after full (cold)", ("after", "full", "cold"), ("after", "quick", "cold"))
    differ("after all levels vs before full (cold)", ("before", "full", "cold"),
           ("after", "all", "cold"))
    differ("after quick vs before full (cold)", ("before", "full", "cold"),
           ("after", "quick", "cold"))
    summary: dict[str, Any] = {
        "before": args.before,
        "targets_s": TARGETS_S,
        "cpus": os.cpu_count(),
        "all_passed": all(r["passed"] for r in runs.values()),
        "findings_identical": {name: not lines for name, lines in findings.items()},
        "work_dir": str(work),
    }
    for name, lines in findings.items():
        print(f"{name}: {'identical' if not lines else f'{len(lines)} differences'}")
        for line in lines[:20]:
            print(f"  {line}")
    summary["differences"] = findings
    emit("check", rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`syncgate check` cold, warm (answered by the verdict cache) and --no-cache, side by side.

Cases: the installed vLLM (``--levels scan,unit``), a ``--source`` branch (a copy of the installed
vLLM's Python, run over the installed build: ``--levels scan,unit --trust-source``) and, with
``--serve``, the serve level ``--quick`` on the installed vLLM (one server; minutes). Each case gets a
fresh SYNCGATE_CACHE_DIR (the embedded model copied in for the serve case): the first run is cold,
then ``--repeat`` warm runs (median reported) and one ``--no-cache`` run. A warm run must say
"cached from" for every level and give the cold run's verdict; the target is <= 2 s.

syncgate itself runs from ``git archive`` of ``--rev`` (default HEAD) through PYTHONPATH: its own
source is part of every key, and in a checkout others are editing, a warm run would rightly miss.

Run: .venv/bin/python benchmarks/bench_check_cache.py [--repeat 3] [--serve] [--rev REV]
     (writes benchmarks/results/check_cache.json)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _revision import before_tree
from _table import emit

TARGET_WARM_S = 2.0


def branch_copy(into: Path) -> Path:
    """The installed vLLM's ``.py`` files (no compiled or data files) under ``into/vllm``."""
    installed = Path(next(iter(importlib.util.find_spec("vllm").submodule_search_locations)))

    def python_only(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n == "__pycache__"
                or not (n.endswith(".py") or (Path(folder) / n).is_dir())]

    shutil.copytree(installed, into / "vllm", ignore=python_only)
    return into


def run(args: list[str], cache: Path, report: Path, src: Path) -> dict[str, Any]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "vllm_syncgate", "check", "--report-dir",
                           str(report), *args], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "SYNCGATE_CACHE_DIR": str(cache),
                               "PYTHONPATH": str(src)})
    wall = time.monotonic() - started
    verdict = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()
    return {"wall_s": wall, "rc": done.returncode, "verdict": verdict.split(" (")[0],
            "cached": done.stderr.count("cached from "), "load": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="warm runs per case")
    parser.add_argument("--serve", action="store_true", help="add the serve level (--quick)")
    parser.add_argument("--rev", default="HEAD", help="the syncgate revision to run")
    options = parser.parse_args()
    rows, ok = [], True
    with tempfile.TemporaryDirectory(prefix="bench-check-cache-") as tmp:
        work = Path(tmp)
        src = before_tree(options.rev, work / "syncgate")
        cases = {"installed scan,unit": ["--levels", "scan,unit"],
                 "branch scan,unit": ["--levels", "scan,unit", "--source",
                                      str(branch_copy(work / "branch")), "--trust-source"]}
        if options.serve:
            cases["installed serve --quick"] = ["--levels", "serve", "--quick"]
        for name, args in cases.items():
            cache = work / f"cache-{len(rows)}"
            if "serve" in args:
                from vllm_syncgate.models import ensure_model, load_recipe

                model, _ = ensure_model(load_recipe("llama"))
                shutil.copytree(model.path, cache / "models" / model.path.name)
            report = work / "report"
            cold = run(args, cache, report, src)
            warm = [run(args, cache, report, src) for _ in range(options.repeat)]
            fresh = run([*args, "--no-cache"], cache, report, src)
            levels = len(args[args.index("--levels") + 1].split(","))
            warm_s = statistics.median(w["wall_s"] for w in warm)
            same = all(w["verdict"] == cold["verdict"] and w["rc"] == cold["rc"] for w in warm)
            hit = all(w["cached"] == levels for w in warm)
            ok &= same and hit and fresh["cached"] == 0 and warm_s <= TARGET_WARM_S
            rows.append({"case": name, "cold_s": round(cold["wall_s"], 2),
                         "warm_s (median)": round(warm_s, 2),
                         "no_cache_s": round(fresh["wall_s"], 2),
                         "cold/warm": round(cold["wall_s"] / warm_s, 1),
                         "warm levels cached": f"{min(w['cached'] for w in warm)}/{levels}",
                         "same verdict": same, "verdict": cold["verdict"],
                         "load": round(statistics.mean(w["load"] for w in [cold, *warm, fresh]), 1)})
    emit("check_cache", rows, {"target_warm_s": TARGET_WARM_S, "all_ok": ok, "rev": options.rev,
                               "cores": len(os.sched_getaffinity(0))})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

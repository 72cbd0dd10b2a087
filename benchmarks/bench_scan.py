"""`syncgate scan`: precision and recall on real upstream releases, next to its speed.

- **Accuracy**: every release of the corpus (tests/data/scan-corpus/labels.toml: vLLM 0.10.1.1,
  0.10.2, 0.32.0 and vllm-ascend 0.9.1 to 0.23.0.post1, fetched from PyPI into the cache) is
  scanned with its profile's allow-list and scored against the hand labels on gate-failing
  sites: TP/FP/FN, precision and recall per release and overall (target: both >= 95%).
- **Speed** on all of vLLM's ``vllm/v1/worker/`` (target: <= 5 s), side by side with a parse-only
  pass in alternating rounds so machine noise hits both: wall and CPU seconds (medians), lines
  per second, the scan/parse ratio.

Run: .venv/bin/python benchmarks/bench_scan.py [--rounds N]   (writes benchmarks/results/scan.json)
"""

from __future__ import annotations

import argparse
import ast
import statistics
import time
from pathlib import Path

from _table import emit
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.corpus import evaluate, load_corpus, ratio, source_root, totals

CORPUS = Path(__file__).parents[1] / "tests" / "data" / "scan-corpus" / "labels.toml"
SPEED_RELEASE = "vllm 0.32.0"


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
    samples: dict[str, list[tuple[float, float]]] = {"parse only": [], "full scan": []}
    result = None
    for _ in range(rounds):
        wall, cpu, _lines = timed(parse_only, root)
        samples["parse only"].append((wall, cpu))
        wall, cpu, result = timed(scan, [str(root)])
        samples["full scan"].append((wall, cpu))
    assert result is not None
    rows = []
    for name, runs in samples.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        rows.append({"variant": name, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                     "lines_per_s_cpu": int(result.lines / cpu)})
    return rows, {
        "path": str(root),
        "files": result.files,
        "lines": result.lines,
        "rounds": rounds,
        "scan_over_parse_cpu": round(rows[1]["cpu_s"] / rows[0]["cpu_s"], 2),
        "target_s": 5.0,
        "within_target_cpu": rows[1]["cpu_s"] <= 5.0,
        "within_target_wall": rows[1]["wall_s"] <= 5.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    accuracy_rows, overall, roots = accuracy()
    speed_rows, speed_summary = speed(roots[SPEED_RELEASE] / "vllm" / "v1" / "worker", args.rounds)
    columns = [*accuracy_rows[0], *speed_rows[0]]
    rows = [{c: r.get(c, "") for c in columns} for r in accuracy_rows]
    rows += [{c: r.get(c, "") for c in columns}
             | {"release": f"{SPEED_RELEASE} v1/worker", "lines": speed_summary["lines"]}
             for r in speed_rows]
    emit("scan", rows, {"accuracy": overall, "speed": speed_summary,
                        "target_precision": 0.95, "target_recall": 0.95})


if __name__ == "__main__":
    main()

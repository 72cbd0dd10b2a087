"""`syncgate repro` sharded over N containers on this machine vs one process doing all the runs.

The suite is tests/data/repro/suite with its CI log (one broken, one 30%-flaky, one
order-dependent, one runner-dependent test), rerun with the same settings both ways:

- one process: `syncgate repro LOG --shard 1/1` on the host, then `repro merge` of its file;
- N containers: `compose up --scale repro-shard=N` of the CPU test image (each replica claims its
  index and writes its shard file), then `repro merge` of the N files on the host. N = 1
  separates the container's own cost from N shards sharing this machine's cores.

Where the time goes, per way (containers: the slowest replica, and the mean):
  start-up   container create/start and the Python/syncgate start, log parse and planning:
             the process's wall time minus the shard's rerun phase (shard file ``wall_s``)
  reruns     the rerun phase: pytest sessions, collection included (``wall_s``)
  test time  the tests' own durations summed over runs (what parallelism can divide)
  merge      `repro merge` on the host
The ratio is N containers' end-to-end time over the one process's (below 1: sharding wins).

Needs a Docker engine and the image (sudo bash ci/docker-up.sh; the e2e test or
bench_container_cpu builds syncgate-cpu:local; this builds the test target on top).
Run: .venv/bin/python benchmarks/bench_repro_shards.py [--shards 1 2 4] [--runs 20]
     (writes benchmarks/results/repro_shards.json; docker output in repro_shards.log)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _table import RESULTS, emit
from vllm_syncgate.containers.local_docker import Engine

REPO = Path(__file__).resolve().parents[1]
TAG = "syncgate-cpu-test:local"
DATA = "tests/data/repro"
ARGS = ["-n", "1", "--replay-order"]
SYNCGATE = [sys.executable, "-m", "vllm_syncgate"]


def _shard_files(directory: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("repro-shard-*.json"))]


def _test_time(doc: dict) -> float:
    return sum(r["duration"] for t in doc["tests"] for r in [*t["runs"], *t["replays"]])


def _merge(directory: Path, out: Path) -> tuple[float, int]:
    started = time.monotonic()
    code = subprocess.run([*SYNCGATE, "repro", "merge", str(directory), "--report-dir", str(out)],
                          capture_output=True, text=True, check=False, timeout=600).returncode
    return time.monotonic() - started, code


def one_process(work: Path, runs: int) -> dict:
    out = work / "one"
    started = time.monotonic()
    subprocess.run([*SYNCGATE, "repro", str(REPO / DATA / "logs/shard_suite.txt"), "--shard", "1/1",
                    "--rootdir", str(REPO / DATA / "suite"), "--runs", str(runs), *ARGS,
                    "--report-dir", str(out)], capture_output=True, check=True, timeout=3600)
    wall = time.monotonic() - started
    [doc] = _shard_files(out)
    merge_s, code = _merge(out, work / "one-merged")
    return {"way": "1 process (host)", "shards": 1, "total_s": wall + merge_s,
            "start_up_s": wall - doc["wall_s"], "reruns_s": doc["wall_s"],
            "test_time_s": _test_time(doc), "merge_s": merge_s, "exit": code,
            "mean_start_up_s": wall - doc["wall_s"], "engine_start_s": None}


def containers(engine: Engine, work: Path, count: int, runs: int, log: Path) -> dict:
    reports = work / f"shards-{count}"
    cache = work / f"cache-{count}"
    for folder in (reports, cache):
        folder.mkdir()
        folder.chmod(0o1777)  # the replicas run as uid 1000
    env = {"SYNCGATE_REPORTS": str(reports), "SYNCGATE_MODEL_CACHE": str(cache),
           "SYNCGATE_UID": "1000", "SYNCGATE_GID": "1000", "SYNCGATE_SHARD_COUNT": str(count),
           "SYNCGATE_REPRO_LOG": f"/workspace/{DATA}/logs/shard_suite.txt",
           "SYNCGATE_REPRO_ARGS": " ".join(["--rootdir", f"/workspace/{DATA}/suite", "--runs",
                                            str(runs), *ARGS])}
    project = f"syncgate-bench-{uuid.uuid4().hex[:8]}"
    try:
        _, up_s = engine.up_scaled(REPO, "repro-shard", count, project=project, env=env, log=log)
        stamps = [engine.timestamps(c) for c in engine.containers(project, "repro-shard")]
    finally:
        engine.down(REPO, project=project, env=env, log=log)
    docs = _shard_files(reports)
    if len(docs) != count:
        raise SystemExit(f"{len(docs)} of {count} shard files written; see {log}")
    merge_s, code = _merge(reports, work / f"merged-{count}")
    lives = [s["finished"] - s["created"] for s in stamps]
    start_ups = [life - doc["wall_s"] for life, doc in zip(sorted(lives),
                                                            sorted(docs, key=lambda d: d["wall_s"]),
                                                            strict=True)]
    return {"way": f"{count} containers", "shards": count, "total_s": up_s + merge_s,
            "start_up_s": max(start_ups), "reruns_s": max(d["wall_s"] for d in docs),
            "test_time_s": sum(_test_time(d) for d in docs), "merge_s": merge_s, "exit": code,
            "mean_start_up_s": sum(start_ups) / count,
            "engine_start_s": max(s["started"] - s["created"] for s in stamps)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--runs", type=int, default=20, help="reruns per test (all shards)")
    args = parser.parse_args()
    engine = Engine.find()
    RESULTS.mkdir(exist_ok=True)
    log = RESULTS / "repro_shards.log"
    log.write_text("")
    build_s = engine.build(REPO, TAG, target="test", log=log)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        work = Path(tmp)
        base = one_process(work, args.runs)
        rows.append(base)
        for count in args.shards:
            rows.append(containers(engine, work, count, args.runs, log))
    for row in rows:
        row["ratio"] = row["total_s"] / base["total_s"]
        for key, value in list(row.items()):
            if isinstance(value, float):
                row[key] = round(value, 2)
    emit("repro_shards", rows, {"runs_per_test": args.runs, "cores": len(os.sched_getaffinity(0)),
                                "image_build_s (cached)": round(build_s, 1),
                                "verdicts_exit": sorted({r["exit"] for r in rows})})


if __name__ == "__main__":
    main()

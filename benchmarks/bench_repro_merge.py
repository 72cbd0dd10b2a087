"""`syncgate repro merge` time for 100,000 run records (issue 22 item 6).

Shard files as ``syncgate repro --shard`` writes them (``shard_document``, real runner-header
shape), ``--shards`` of them holding ``--records`` run records in all: ``--tests`` tests, a third
broken, a third 30%-flaky, a third passing, every failed run with a 400-character traceback.
Timed: ``merge(paths)`` end to end (read, parse, check the shards belong together, judge every
test with its environment split), split into reading+parsing and judging, and peak RSS growth;
a tenth of the records is timed in the same run so the scaling ratio sits next to it.

Run: .venv/bin/python benchmarks/bench_repro_merge.py [--records 100000] [--shards 4]
     [--tests 200] [--rounds 3]   (writes benchmarks/results/repro_merge.json)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

from _table import emit
from vllm_syncgate.repro.judge import ReproVerdict, RunResult, TestVerdict
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome
from vllm_syncgate.repro.shardfile import load_shard, merge, merge_documents, shard_document
from vllm_syncgate.repro.shards import Shard

TRACEBACK = ("tests/e2e/test_x.py:41: in test_x\n    assert out == expected\n"
             "E   AssertionError: outputs differ\n" + "E   " + "x" * 300)


def write_shards(directory: Path, records: int, shards: int, tests: int) -> list[Path]:
    runs = records // tests
    nodeids = [f"tests/e2e/test_{i}.py::test_case[{i}]" for i in range(tests)]
    log = CiLog(source="ci.log", format="github",
                failures=[CiFailure(n, CiOutcome.FAILED) for n in nodeids])
    settings = {"runs": runs, "confidence": 0.95, "interval": "exact", "replay_order": False,
                "replay_runs": 3}
    rng = random.Random(22)
    paths = []
    for index in range(1, shards + 1):
        shard = Shard(index, shards)
        verdicts = []
        for i, failure in enumerate(log.failures):
            rate = (1.0, 0.3, 0.0)[i % 3]
            results = []
            for order, run in enumerate(shard.runs_of("digest", failure.nodeid, runs)):
                failed = rng.random() < rate
                results.append(RunResult(run, "failed" if failed else "passed",
                                         "call" if failed else "", "gw0", 0.12,
                                         TRACEBACK if failed else "",
                                         signature="AssertionError at tests/e2e/test_x.py:41"
                                         if failed else "", order=order))
            verdicts.append(TestVerdict(failure.nodeid, ReproVerdict.NOT_REPRODUCED, failure,
                                        runs=results))
        head = {"host": f"runner-{index}", "device": "npu x8", "driver": "24.1.rc2",
                "syncgate": "bench", "env": {"RUNNER_NAME": f"runner-{index}"},
                "env_set": sorted(f"VAR_{k}" for k in range(80))}
        doc = shard_document(shard, log, "digest", settings, head, "bench", verdicts, 1.0)
        path = directory / shard.filename
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def timed_merge(paths: list[Path]) -> tuple[float, float, float, int]:
    start = time.perf_counter()
    docs = {p: load_shard(p) for p in paths}
    parsed = time.perf_counter()
    merged = merge_documents(docs)
    done = time.perf_counter()
    total = time.perf_counter()
    merge(paths)
    total = time.perf_counter() - total
    return total, parsed - start, done - parsed, len(merged.verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    results = {}
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for records in (args.records // 10, args.records):
        with tempfile.TemporaryDirectory(prefix="bench-repro-merge-") as tmp:
            paths = write_shards(Path(tmp), records, args.shards, args.tests)
            size = sum(p.stat().st_size for p in paths) / 1e6
            samples = [timed_merge(paths) for _ in range(args.rounds)]
        total = statistics.median(s[0] for s in samples)
        results[records] = total
        rows.append({"run records": records, "shard files": args.shards, "MB": size,
                     "merge seconds": total,
                     "read+parse seconds": statistics.median(s[1] for s in samples),
                     "judge seconds": statistics.median(s[2] for s in samples),
                     "tests": samples[0][3], "records/s": records / total})
    emit("repro_merge", rows, {
        "merge_seconds_100k": results[args.records],
        "scaling_ratio_10x_records": results[args.records] / results[args.records // 10],
        "peak_rss_growth_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                               - rss_before) / 1024,
        "rounds": args.rounds, "cpus": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],
    })


if __name__ == "__main__":
    main()

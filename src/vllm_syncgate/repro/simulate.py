"""The statistics, proved by simulation: the real stopping rule and judge, simulated outcomes.

A claim such as "95% interval" holds only if, over many repros of a test with a known failure
rate, the printed interval contains that rate at least 95% of the time, whatever the early stop
did. This module drives :func:`~vllm_syncgate.repro.rerun_plugin.settled` (single machine, one
worker, so it stops exactly where the rule says) and the shard split, shard documents and
:func:`~vllm_syncgate.repro.shardfile.merge_documents` (N shards, no early stop) with Bernoulli
outcomes; every verdict comes from :func:`~vllm_syncgate.repro.judge.judge`. No process, no
sleep: 6,000 repros take seconds. ``benchmarks/bench_repro_stats.py`` prints the table.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vllm_syncgate.repro.judge import ReproVerdict, RunResult, TestVerdict, judge
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome
from vllm_syncgate.repro.reproduce import RerunConfig
from vllm_syncgate.repro.rerun_plugin import settled
from vllm_syncgate.repro.shardfile import merge_documents, shard_document
from vllm_syncgate.repro.shards import Shard

RATES = (0.0, 0.01, 0.05, 0.3, 0.7, 1.0)
NODEID = "sim.py::test_simulated"


@dataclass
class Row:
    """One line of the table: a true rate, a mode, and how the verdicts and intervals did."""

    rate: float
    mode: str
    repros: int
    accuracy: float  # share of verdicts that are the right class
    claims_hold: float  # right class, or "not reproduced" with a bound above the true rate
    coverage: float  # share of printed intervals/bounds that contain the true rate
    mean_runs: float
    fewest_runs_with_rate: int | None  # fewest runs behind a printed flaky rate
    verdicts: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def expected(rate: float) -> ReproVerdict:
    if rate == 0.0:
        return ReproVerdict.NOT_REPRODUCED
    return ReproVerdict.BROKEN if rate == 1.0 else ReproVerdict.FLAKY


def covers(verdict: TestVerdict, rate: float) -> bool:
    """Whether what the report prints about the rate is true."""
    if verdict.interval is not None:
        return verdict.interval[0] <= rate <= verdict.interval[1]
    assert verdict.upper_bound is not None
    return rate <= verdict.upper_bound


def _run(index: int, failed: bool, shard: int = 0) -> RunResult:
    return RunResult(index, "failed" if failed else "passed", "call" if failed else "",
                     signature="AssertionError at sim.py:1" if failed else "", shard=shard)


def single(rate: float, config: RerunConfig, rng: random.Random) -> TestVerdict:
    """One repro on one machine: run until :func:`settled` says stop, or all runs are done."""
    runs = config.resolved_runs()
    plan = {"mode": "isolation", "broken_after": min(config.broken_after, runs),
            "min_runs": min(config.min_runs, runs)}
    results: list[RunResult] = []
    failed = passed = 0
    for index in range(1, runs + 1):
        fail = rng.random() < rate
        failed, passed = failed + fail, passed + (not fail)
        results.append(_run(index, fail))
        if config.early_stop and settled(failed, passed, plan):
            break
    return judge(NODEID, CiFailure(NODEID, CiOutcome.FAILED), results, [],
                 confidence=config.confidence, interval_kind=config.interval)


def sharded(rate: float, config: RerunConfig, rng: random.Random, shards: int,
            key: str) -> TestVerdict:
    """One repro over ``shards`` shards, each its share, merged as ``repro merge`` merges."""
    runs = config.resolved_runs()
    settings = {"runs": runs, "confidence": config.confidence, "interval": config.interval,
                "replay_order": False, "replay_runs": config.replay_runs}
    log = CiLog(source="simulated", format="pytest",
                failures=[CiFailure(NODEID, CiOutcome.FAILED)])
    docs: dict[Path, dict[str, Any]] = {}
    for index in range(1, shards + 1):
        shard = Shard(index, shards)
        results = [_run(r, rng.random() < rate, index) for r in shard.runs_of(key, NODEID, runs)]
        mine = TestVerdict(NODEID, ReproVerdict.NOT_REPRODUCED, log.failures[0], runs=results)
        head = {"host": f"runner-{index}", "device": "cpu", "syncgate": "sim"}
        docs[Path(shard.filename)] = shard_document(shard, log, key, settings, head, "simulated",
                                                    [mine], 0.0)
    [verdict] = merge_documents(docs).verdicts
    return verdict


def table(repros: int = 1000, seed: int = 2026, shards: int = 4,
          rates: tuple[float, ...] = RATES, config: RerunConfig | None = None) -> list[Row]:
    """Single-machine and sharded rows for every rate, ``repros`` simulated repros each."""
    config = config or RerunConfig()
    rng = random.Random(seed)
    rows = []
    for rate in rates:
        for mode in ("single", f"{shards} shards"):
            verdicts = [single(rate, config, rng) if mode == "single"
                        else sharded(rate, config, rng, shards, f"sim:{seed}:{rate}:{k}")
                        for k in range(repros)]
            rows.append(_row(rate, mode, verdicts))
    return rows


def _row(rate: float, mode: str, verdicts: list[TestVerdict]) -> Row:
    right = [v.verdict is expected(rate) for v in verdicts]
    holds = [ok or (v.verdict is ReproVerdict.NOT_REPRODUCED and covers(v, rate))
             for ok, v in zip(right, verdicts, strict=True)]
    rated = [len(v.runs) for v in verdicts if v.verdict is ReproVerdict.FLAKY]
    tally: dict[str, int] = {}
    for v in verdicts:
        tally[v.verdict.value] = tally.get(v.verdict.value, 0) + 1
    n = len(verdicts)
    return Row(rate, mode, n, sum(right) / n, sum(holds) / n,
               sum(covers(v, rate) for v in verdicts) / n,
               sum(len(v.runs) for v in verdicts) / n, min(rated) if rated else None, tally)

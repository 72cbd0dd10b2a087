"""Rerun planning and verdicts: from CI failures to broken / flaky / order-dependent / ...

1. Validate every CI failure against the local tree (missing, environment, runnable).
2. Isolation: rerun the runnable ones N times in one pytest session (xdist spreads the copies),
   stopping a test early by :func:`~vllm_syncgate.repro.rerun_plugin.settled` (failed its first
   ``broken_after`` runs, or both outcomes seen and ``min_runs`` done).
3. Replay (optional): a test that never failed alone is rerun after the tests that preceded it on
   its CI worker, in CI order, one fresh process per test (several in parallel); failing only
   there makes it order-dependent.

With a :class:`~vllm_syncgate.repro.shards.Shard` only this shard's run indices of every test run,
nothing stops early (other shards' outcomes are unknown here), and every test with CI
predecessors gets its share of replays; :func:`~vllm_syncgate.repro.judge.judge` classifies
either way.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from vllm_syncgate.errors import UsageError
from vllm_syncgate.repro.judge import ReproVerdict, RunResult, TestVerdict, judge
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome
from vllm_syncgate.repro.nodeids import (
    LocalTree,
    collect,
    collected_in_session,
    file_of,
    plausible,
    rerun_files,
)
from vllm_syncgate.repro.runner import PytestResult, Runner, check_exit
from vllm_syncgate.repro.shards import Shard
from vllm_syncgate.repro.stats import runs_needed


@dataclass
class RerunConfig:
    """How hard to try. ``runs`` defaults to what rules out ``target_rate`` at ``confidence``."""

    runs: int | None = None
    target_rate: float = 0.05
    confidence: float = 0.95
    workers: int = 2
    early_stop: bool = True
    broken_after: int = 14  # a 70%-flaky test is called broken with chance 0.7**14 < 1%
    min_runs: int = 20  # no flaky verdict (and no rate) from fewer runs
    replay_order: bool = False
    replay_runs: int = 3
    interval: str = "exact"
    seed: int | None = None
    shard: Shard | None = None
    shard_key: str = ""  # the log's digest: fixes every shard's share and seed

    def resolved_runs(self) -> int:
        if self.runs is None:
            return runs_needed(self.target_rate, self.confidence)
        if self.runs < 1:
            raise UsageError(f"--runs must be at least 1, got {self.runs}")
        return self.runs

    def validate(self) -> None:
        if not 0.0 < self.target_rate < 1.0 or not 0.0 < self.confidence < 1.0:
            raise UsageError("--target-rate and --confidence must lie strictly between 0 and 1")
        self.resolved_runs()
        if self.workers < 1:
            raise UsageError(f"--workers must be at least 1, got {self.workers}")
        if self.replay_runs < 1:
            raise UsageError(f"--replay-runs must be at least 1, got {self.replay_runs}")
        if self.broken_after < 1:
            raise UsageError(f"--broken-after must be at least 1, got {self.broken_after}")
        if self.min_runs < 1:
            raise UsageError(f"--min-runs must be at least 1, got {self.min_runs}")
        if self.interval not in ("wilson", "exact"):
            raise UsageError(f"--interval must be wilson or exact, got {self.interval}")


def _candidate_files(failure: CiFailure) -> list[str]:
    """Files that may hold a failure; xunit2 classnames can name a module or a class in one."""
    if failure.address is None or failure.outcome is CiOutcome.COLLECTION_ERROR:
        return [failure.nodeid]
    parts = failure.address[0].split(".")
    return ["/".join(parts[:i]) + ".py" for i in range(1, len(parts) + 1)]


def triage(log: CiLog, tree: LocalTree) -> tuple[list[TestVerdict], dict[str, CiFailure]]:
    """Settle what needs no rerun (missing, environment); return the rest as runnable targets."""
    settled: list[TestVerdict] = []
    runnable: dict[str, CiFailure] = {}
    seen: set[str] = set()
    for failure in log.failures:
        nodeid = tree.resolve(failure)
        if nodeid in seen:
            continue
        seen.add(nodeid)
        path = nodeid.split("::", 1)[0]
        if path in tree.refused:  # never imported: pytest would not collect it as a test
            settled.append(TestVerdict(nodeid, ReproVerdict.MISSING, failure,
                                       detail=tree.refused[path]))
        elif failure.outcome is CiOutcome.COLLECTION_ERROR:
            local = tree.errors.get(path)
            detail = ("collection error in CI and here: " + local if local else
                      "collection error in CI; collects here" if tree.has(path) else
                      "collection error in CI; file not found here")
            settled.append(TestVerdict(nodeid, ReproVerdict.ENVIRONMENT, failure, detail=detail))
        elif path in tree.errors:
            settled.append(TestVerdict(nodeid, ReproVerdict.ENVIRONMENT, failure,
                                       detail=f"{path} does not collect here: "
                                              f"{tree.errors[path]}"))
        elif not plausible(nodeid) or not tree.has(nodeid):
            why = ("not a test node id" if not plausible(nodeid) else
                   "file not found here" if path not in tree.files else
                   "no such test in the collected tree")
            settled.append(TestVerdict(nodeid, ReproVerdict.MISSING, failure, detail=why))
        else:
            runnable[nodeid] = failure
    return settled, runnable


def _session_args(runner: Runner, workers: int, items: int, config: RerunConfig) -> list[str]:
    # --maxfail=0 undoes a project's -x/--maxfail: a rerun must not stop at its first failure.
    args = ["-q", "-p", "no:cacheprovider", "-rN", "--tb=short", "--maxfail=0"]
    if workers > 1 and items > 1 and runner.has_module("xdist"):
        args += ["-n", str(min(workers, items)), "--dist", "load"]
    elif runner.has_module("xdist"):
        args += ["-n", "0"]  # not -p no:xdist: a project's addopts may carry -n
    if config.seed is not None and runner.has_module("pytest_randomly"):
        args += ["-p", "randomly", f"--randomly-seed={config.seed}", "--randomly-dont-reorganize"]
    else:
        args += ["-p", "no:randomly"]
    return args


def _collect_runs(session: PytestResult, replay: bool) -> dict[str, list[RunResult]]:
    """Fold per-phase report records into one outcome per (target, run).

    A run whose worker died mid-test has a setup report and no teardown; xdist then sends a
    crash report (negative run index from the plugin) that is matched back to it by worker.
    Without xdist the whole session dies with it: its unfinished run is the crash.
    """
    records = session.records
    died = session.exit_code not in (0, 1, 2, 5)
    runs: dict[str, dict[int, RunResult]] = defaultdict(dict)
    finished: set[tuple[str, int]] = set()
    crashes = []
    order = 0
    for rec in records:
        if rec.get("role") != "target":
            continue
        target, index = rec["target"], int(rec["run"])
        if index < 0:
            crashes.append(rec)
            continue
        result = runs[target].get(index)
        if result is None:
            order += 1
            result = runs[target][index] = RunResult(index, "passed", worker=rec["worker"],
                                                     replay=replay, order=order)
        result.duration += float(rec.get("duration") or 0.0)
        if rec["when"] == "teardown":
            finished.add((target, index))
        if rec["outcome"] == "failed" and result.outcome in ("passed", "skipped"):
            result.outcome = "failed" if rec["when"] == "call" else "error"
            result.phase = rec["when"]
            result.longrepr = rec.get("longrepr", "")
            result.signature = rec.get("signature", "")
        elif rec["outcome"] == "skipped" and result.outcome == "passed":
            result.outcome = "skipped"
    for rec in crashes:
        target = rec["target"]
        open_runs = [r for i, r in runs[target].items()
                     if (target, i) not in finished and r.worker == rec["worker"]]
        result = open_runs[0] if open_runs else RunResult(int(rec["run"]), "error",
                                                          worker=rec["worker"], replay=replay)
        result.outcome, result.phase = "error", "crash"
        result.longrepr = rec.get("longrepr", "")
        result.signature = "crash: the worker process died"
        runs[target][result.run] = result
        finished.add((target, result.run))
    if died:
        for target, by_run in runs.items():
            for index, run in by_run.items():
                if (target, index) not in finished:
                    run.outcome, run.phase = "error", "crash"
                    run.longrepr = f"pytest exited with code {session.exit_code} during this run"
                    run.signature = "crash: the session process died"
                    finished.add((target, index))
    # A run that neither finished nor crashed (the session was cut short) is no evidence.
    return {t: [r for i, r in sorted(by_run.items()) if (t, i) in finished]
            for t, by_run in runs.items()}


def _collect_first(log: CiLog, config: RerunConfig) -> bool:
    """Whether the tree must be collected before the rerun: xunit2 addresses are resolved
    through it, replay needs the predecessors it holds, and a CI collection error is judged by
    how the file collects here. Otherwise validation folds into the rerun session."""
    return config.replay_order or any(
        f.address is not None or f.outcome is CiOutcome.COLLECTION_ERROR for f in log.failures)


def _shares(config: RerunConfig, targets: list[str], runs: int,
            salt: str = "") -> dict[str, list[int]] | None:
    """Each target's run indices on this shard (``None``: every run, no shard)."""
    if config.shard is None:
        return None
    return {t: config.shard.runs_of(config.shard_key + salt, t, runs) for t in targets}


def _plan(config: RerunConfig, targets: list[str], runs: int) -> dict[str, Any]:
    plan: dict[str, Any] = {"mode": "isolation", "runs": runs, "targets": targets,
                            "early_stop": config.early_stop and config.shard is None,
                            "broken_after": min(config.broken_after, runs),
                            "min_runs": min(config.min_runs, runs)}
    shares = _shares(config, targets, runs)
    if shares is not None:
        plan["shares"] = shares
    return plan


def _items(plan: dict[str, Any]) -> int:
    shares = plan.get("shares")
    return sum(map(len, shares.values())) if shares else plan["runs"] * len(plan["targets"])


def reproduce(log: CiLog, runner: Runner, config: RerunConfig) -> list[TestVerdict]:
    """Validate, rerun and classify every failure in ``log`` (this shard's share of it)."""
    config.validate()
    candidates = [c for f in log.failures for c in _candidate_files(f)]
    if config.replay_order:
        candidates += [p for f in log.failures for p in f.predecessors]
    runs = config.resolved_runs()
    if _collect_first(log, config):
        tree = collect(runner, candidates)
        verdicts, runnable = triage(log, tree)
        if not runnable:
            return verdicts
        plan = _plan(config, list(runnable), runs)
        args = _session_args(runner, config.workers, _items(plan), config)
        result = check_exit(runner.pytest([*args, *runnable], plan), runner.description)
    else:
        # one session validates and reruns: pytest gets the validated files only; the log's
        # node ids go in the plan, where the plugin compares them with what it collected
        tree, files = rerun_files(runner, candidates)
        targets = list(dict.fromkeys(f.nodeid for f in log.failures
                                     if plausible(f.nodeid) and file_of(f.nodeid) in files))
        result = PytestResult(5, "")
        if targets:
            plan = _plan(config, targets, runs)
            args = _session_args(runner, config.workers, _items(plan), config)
            result = check_exit(runner.pytest(
                [*args, "--continue-on-collection-errors", *files],
                {**plan, "report_collected": True}), runner.description)
        verdicts, runnable = triage(log, collected_in_session(tree, result))
        if not runnable:
            return verdicts
    isolation = _collect_runs(result, replay=False)

    blocks: dict[str, tuple[str, ...]] = {}
    for nodeid, failure in runnable.items():
        before = tuple(p for p in failure.predecessors if tree.has(p) and p != nodeid)
        alone = isolation.get(nodeid, [])
        # one machine replays what never failed alone; a shard cannot know that, so it replays
        # its share of every test with predecessors and the judge decides on all shards' runs
        if config.replay_order and before and (config.shard is not None
                                               or not any(r.failed for r in alone)):
            blocks[nodeid] = before
    replays = _replay(runner, config, blocks) if blocks else {}
    for nodeid, failure in runnable.items():
        before = tuple(p for p in failure.predecessors if tree.has(p) and p != nodeid)
        verdicts.append(judge(nodeid, failure, isolation.get(nodeid, []),
                              replays.get(nodeid, []), confidence=config.confidence,
                              interval_kind=config.interval, predecessors=before))
    return verdicts


def _replay(runner: Runner, config: RerunConfig,
            blocks: dict[str, tuple[str, ...]]) -> dict[str, list[RunResult]]:
    """Rerun each target after its CI predecessors, in CI order, one process per target."""
    args = _session_args(runner, 1, 1, config)
    shares = _shares(config, list(blocks), config.replay_runs, salt=":replay") or {}
    wanted = [t for t in blocks if shares.get(t, True)]

    def replay_one(target: str) -> list[RunResult]:
        before = blocks[target]
        plan: dict[str, Any] = {
            "mode": "replay", "runs": config.replay_runs,
            "early_stop": config.early_stop and config.shard is None, "broken_after": 1,
            "blocks": [{"target": target, "sequence": [*before, target]}]}
        if target in shares:
            plan["shares"] = {target: shares[target]}
        unique = list(dict.fromkeys((*before, target)))
        result = check_exit(runner.pytest([*args, *unique], plan), runner.description)
        return _collect_runs(result, replay=True).get(target, [])

    width = max(1, min(config.workers, len(wanted))) if runner.concurrent else 1
    with ThreadPoolExecutor(max_workers=width) as pool:
        return dict(zip(wanted, pool.map(replay_one, wanted), strict=True))

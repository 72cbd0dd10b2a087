"""The one judging function: run records in, a verdict with its statistics out.

A single-machine ``syncgate repro`` and ``syncgate repro merge`` of shard files both end here, so
the same records always give the same verdict. Records carry the shard they ran on; a failure
that only ever happens on the shards where one header field has one value (a runner, a driver,
an environment variable) is environment-dependent when chance alone would put all failures
there with probability below ``(1 - confidence) / 10`` (one-sided Fisher exact test,
Bonferroni over the distinct shard sets the header fields define): a strong claim, so a strict
level; a runner that fails every run is far below it.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_syncgate.repro.model import CiFailure
from vllm_syncgate.repro.stats import (
    clopper_pearson_interval,
    wilson_interval,
    zero_failure_upper_bound,
)

#: Header fields that name a cause, most specific first; ``host`` (one per runner) comes last.
FIELD_PRIORITY = ("driver", "cann", "device", "image_digest", "image", "torch", "torch_npu",
                  "vllm", "vllm_ascend", "transformers", "python", "machine")


class ReproVerdict(str, enum.Enum):
    """What the reruns say about one CI failure (a sync budget's is :class:`vllm_syncgate.audit.Verdict`)."""

    BROKEN = "broken"
    FLAKY = "flaky"
    ORDER_DEPENDENT = "order-dependent"
    ENV_DEPENDENT = "environment-dependent"
    NOT_REPRODUCED = "not-reproduced"
    ENVIRONMENT = "environment"
    MISSING = "missing"


@dataclass
class RunResult:
    """One rerun of one target: its outcome and, if it failed, where and why."""

    run: int
    outcome: str  # passed | failed | error | skipped
    phase: str = ""
    worker: str = ""
    duration: float = 0.0
    longrepr: str = ""
    replay: bool = False
    signature: str = ""
    order: int = 0  # position of this run in its session's execution order
    shard: int = 0  # 1-based shard index; 0 on a single machine

    @property
    def failed(self) -> bool:
        return self.outcome in ("failed", "error")


@dataclass(frozen=True)
class EnvSplit:
    """Failures confined to the shards where ``field`` is ``value``."""

    field: str
    value: Any
    others: tuple[Any, ...]
    failures: int
    runs: int
    p_value: float


@dataclass
class TestVerdict:
    """The verdict for one CI failure, with the evidence behind it."""

    __test__ = False  # not a pytest test class, despite the name

    nodeid: str
    verdict: ReproVerdict
    ci: CiFailure
    runs: list[RunResult] = field(default_factory=list)
    replays: list[RunResult] = field(default_factory=list)
    interval: tuple[float, float] | None = None
    upper_bound: float | None = None
    detail: str = ""
    predecessors: tuple[str, ...] = ()
    split: EnvSplit | None = None

    @property
    def failures(self) -> int:
        return sum(r.failed for r in self.runs)

    @property
    def replay_failures(self) -> int:
        return sum(r.failed for r in self.replays)

    @property
    def first_traceback(self) -> str:
        for run in [*self.runs, *self.replays]:
            if run.longrepr:
                return run.longrepr
        return ""


def interval(kind: str, failures: int, runs: int, confidence: float) -> tuple[float, float]:
    """The two-sided interval ``kind`` (``wilson`` or ``exact``) for ``failures``/``runs``."""
    fn = clopper_pearson_interval if kind == "exact" else wilson_interval
    return fn(failures, runs, confidence)


def judge(nodeid: str, ci: CiFailure, runs: list[RunResult], replays: list[RunResult], *,
          confidence: float, interval_kind: str, predecessors: tuple[str, ...] = (),
          headers: Mapping[int, Mapping[str, Any]] | None = None) -> TestVerdict:
    """Classify one test from all its run records (isolation ``runs``, CI-order ``replays``)."""
    verdict = TestVerdict(nodeid, ReproVerdict.NOT_REPRODUCED, ci, runs=runs, replays=replays,
                          predecessors=predecessors)
    done = [r for r in runs if r.outcome != "skipped"]
    fails = sum(r.failed for r in done)
    if not done:
        verdict.detail = "no rerun produced a result (skipped or deselected here)"
        verdict.upper_bound = 1.0
        return verdict
    if fails:
        verdict.interval = interval(interval_kind, fails, len(done), confidence)
    if fails == len(done):
        verdict.verdict = ReproVerdict.BROKEN
        kinds = sorted({r.signature for r in done if r.signature})
        if len(kinds) > 1:
            verdict.detail = f"{len(kinds)} different failure signatures: " + "; ".join(kinds)
    elif fails:
        verdict.split = environment_split(done, headers or {}, (1.0 - confidence) / 10)
        verdict.verdict = (ReproVerdict.ENV_DEPENDENT if verdict.split is not None
                           else ReproVerdict.FLAKY)
    else:
        verdict.upper_bound = zero_failure_upper_bound(len(done), confidence)
        if verdict.replay_failures:
            verdict.verdict = ReproVerdict.ORDER_DEPENDENT
            verdict.detail = (f"fails after {len(predecessors)} CI predecessor(s) in CI order, "
                              f"never alone")
    return verdict


def _fields(header: Mapping[str, Any]) -> dict[str, Any]:
    """Flatten a shard header: ``env.NAME`` values and ``env_set.NAME`` set/unset."""
    flat = {k: v for k, v in header.items() if not isinstance(v, dict | list)}
    flat.update({f"env.{k}": v for k, v in (header.get("env") or {}).items()})
    flat.update({f"env_set.{k}": "set" for k in header.get("env_set") or ()})
    return flat


def _rank(name: str) -> tuple[int, str]:
    if name in FIELD_PRIORITY:
        return FIELD_PRIORITY.index(name), name
    order = {"env": 1, "env_set": 2}.get(name.split(".", 1)[0], 3 if name != "host" else 4)
    return len(FIELD_PRIORITY) + order, name


def environment_split(done: list[RunResult], headers: Mapping[int, Mapping[str, Any]],
                      alpha: float) -> EnvSplit | None:
    """The header field whose value alone separates the failing shards, if chance cannot."""
    tally: dict[int, list[int]] = {}
    for r in done:
        tally.setdefault(r.shard, [0, 0])
        tally[r.shard][0] += r.failed
        tally[r.shard][1] += 1
    if len(tally) < 2:
        return None
    flat = {s: _fields(headers.get(s, {})) for s in tally}
    names = sorted(set().union(*flat.values()), key=_rank)
    total_fail = sum(f for f, _ in tally.values())
    total = sum(n for _, n in tally.values())
    candidates: dict[frozenset[int], tuple[str, Any]] = {}
    for name in names:
        values = {s: flat[s].get(name, "unset" if name.startswith("env_set.") else None)
                  for s in tally}
        for value in set(map(_key, values.values())):
            group = frozenset(s for s in tally if _key(values[s]) == value)
            if len(group) < len(tally):
                candidates.setdefault(group, (name, values[next(iter(group))]))
    best: EnvSplit | None = None
    for group, (name, value) in candidates.items():
        if any(tally[s][0] for s in tally if s not in group):
            continue
        inside = sum(tally[s][1] for s in group)
        p = math.comb(inside, total_fail) / math.comb(total, total_fail)
        if p < alpha / len(candidates) and (best is None or p < best.p_value):
            others = tuple(sorted({str(flat[s].get(name, "unset" if name.startswith("env_set.")
                                                   else None))
                                   for s in tally if s not in group}))
            best = EnvSplit(name, value, others, total_fail, inside, p)
    return best


def _key(value: Any) -> str:
    return repr(value)

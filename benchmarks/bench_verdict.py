"""Cost of judging a run: ``audit.verdict.evaluate`` over 100k journaled decode steps.

Each step holds the capped ``_to_list`` transfer wait (allowed) and one blocking readback
(counted, a breach), so every step goes through the allow rules, the cap and the breach
bookkeeping. CPU time (not wall time: the machine is shared), best of ROUNDS. With ``--before REV``
the same steps are judged by the ``syncgate`` package of git revision REV too, in a subprocess,
and both rows are printed side by side.

Run: .venv/bin/python benchmarks/bench_verdict.py --before 9d3ec16
     (writes benchmarks/results/verdict.json)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _revision import before_tree

STEPS = 100_000
ROUNDS = 5


def measure() -> dict[str, float]:
    """Best CPU seconds of ``evaluate`` over STEPS steps, with whichever syncgate is importable."""
    from vllm_syncgate.audit.budgets import parse_budgets
    from vllm_syncgate.audit.events import CallSite, StepKind, SyncEvent, SyncKind
    from vllm_syncgate.audit.ledger import Step
    from vllm_syncgate.audit.verdict import evaluate

    budget = parse_budgets({"profile": "bench", "budget": [{
        "runner": "v1", "limits": {"default": {"event_sync": 1}},
        "allow": [{"site": "vllm.worker:Runner._to_list", "kind": "event_sync", "max_per_step": 1,
                   "reason": "the transfer wait"}],
    }]}).select("v1", False)
    wait = CallSite("runner.py", 7, "_to_list", "vllm.worker", "Runner._to_list")
    readback = CallSite("runner.py", 9, "_bookkeeping", "vllm.worker", "Runner._bookkeeping")
    steps = [Step(i, StepKind.DECODE, [
        SyncEvent(SyncKind.EVENT_SYNC, "Event.synchronize", wait, i, StepKind.DECODE),
        SyncEvent(SyncKind.BLOCKING_READBACK, "Tensor.tolist", readback, i, StepKind.DECODE),
    ]) for i in range(STEPS)]
    best = float("inf")
    for _ in range(ROUNDS):
        gc.collect()
        start = time.process_time()
        verdict = evaluate(steps, budget)
        best = min(best, time.process_time() - start)
    if len(verdict.breaches) != 1 or verdict.allowed["vllm.worker:Runner._to_list"] != STEPS:
        raise SystemExit(f"bench_verdict: unexpected verdict {verdict.to_json()['breaches']}")
    return {"cpu_s": best, "us_per_step": best / STEPS * 1e6}


def _measure_at(rev: str) -> dict[str, float]:
    """``measure`` run against the package of ``rev`` (extracted with git archive)."""
    with tempfile.TemporaryDirectory(prefix="syncgate-bench-") as tmp:
        src = before_tree(rev, Path(tmp))
        env = {**os.environ, "PYTHONPATH": str(src)}
        out = subprocess.run([sys.executable, __file__, "--json"], check=True, env=env,
                             capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also judge with the package of REV")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # child of --before
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure()))
        return
    from _table import emit

    rows = []
    if args.before:
        rows.append({"package": args.before, **_measure_at(args.before)})
    rows.append({"package": "working tree", **measure()})
    summary = {"steps": STEPS, "events_per_step": 2, "rounds": ROUNDS}
    if args.before:
        summary["after_over_before"] = rows[1]["cpu_s"] / rows[0]["cpu_s"]
    emit("verdict", rows, summary)


if __name__ == "__main__":
    main()

"""`syncgate repro` statistics by simulation: verdict accuracy and interval coverage (issue 22).

For true failure rates 0, 1%, 5%, 30%, 70% and 100%, ``--repros`` simulated repros each (default
1,000), single machine (the plugin's early-stop rule, one worker, stopping exactly where the rule
says) and sharded (``--shards`` shard documents merged as ``repro merge`` merges them). Every
verdict comes from the same ``judge()`` the command uses; outcomes are Bernoulli draws, so
there is no process and no sleep. Side by side, the rule before issue 22 (stop as soon as a
test passed and failed, broken after 10, Wilson interval) on the same seeds.

Columns: accuracy = share of verdicts of the right class (not-reproduced at 0, broken at 100%,
flaky between); claims hold = right class, or "not reproduced, rate < bound" with a bound above
the true rate; coverage = share of printed intervals (or 0-failure upper bounds) that contain
the true rate; fewest runs = fewest runs behind a printed flaky rate.

Run: .venv/bin/python benchmarks/bench_repro_stats.py [--repros 1000] [--shards 4] [--seed 2026]
(writes benchmarks/results/repro_stats.json)
"""

from __future__ import annotations

import argparse
import time

from _table import emit
from vllm_syncgate.repro.reproduce import RerunConfig
from vllm_syncgate.repro.simulate import RATES, table

ACCEPTANCE_RATES = (0.0, 0.3, 1.0)
RULES = {"default": RerunConfig(),
         "before (stop at pass+fail, Wilson)": RerunConfig(min_runs=1, broken_after=10,
                                                           interval="wilson")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repros", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()

    rows = []
    accepted = True
    start = time.perf_counter()
    for rule, config in RULES.items():
        for row in table(args.repros, args.seed, args.shards, RATES, config):
            rows.append({"rule": rule, "rate": row.rate, "mode": row.mode,
                         "accuracy": row.accuracy, "claims hold": row.claims_hold,
                         "coverage": row.coverage, "mean runs": row.mean_runs,
                         "fewest runs with a rate": row.fewest_runs_with_rate,
                         "verdicts": row.verdicts})
            if rule == "default" and row.rate in ACCEPTANCE_RATES:
                accepted &= row.coverage >= 0.95 and row.accuracy >= 0.99
            if rule == "default" and row.rate == 0.3:
                accepted &= (row.fewest_runs_with_rate or 0) >= config.min_runs
    emit("repro_stats", rows, {
        "repros_per_cell": args.repros, "shards": args.shards, "seed": args.seed,
        "defaults": {"runs": RULES["default"].resolved_runs(),
                     "min_runs": RULES["default"].min_runs,
                     "broken_after": RULES["default"].broken_after,
                     "interval": RULES["default"].interval},
        "acceptance": "coverage >= 95% and accuracy >= 99% at rates 0, 30%, 100% (defaults); "
                      "the 30% test never gets a rate from fewer than min_runs runs",
        "acceptance_met": accepted,
        "seconds": time.perf_counter() - start,
    })


if __name__ == "__main__":
    main()

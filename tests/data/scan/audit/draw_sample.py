"""Redraw the flagged-site audit sample (tests/data/scan/audit/flagged.toml).

Population: every row with kind = "unlabelled" and parent_fails = true in the final-engine table
of tests/data/scan/heldout10, heldout11 and heldout12 results.toml ([final] for 10 and 11;
split 12 has no [final] table, its [models] table is the final engine f76e7ad, see docs/scan.md).
Each row's `item` (a short sha) is mapped to its commit, repository and parent through the same
split's labels.toml. Sites are de-duplicated by (repository, file, function, code); a site seen
in several commits keeps its first occurrence (splits in the order 10, 11, 12, rows in file order)
as the commit whose parent was read.

Sample: random.Random(20261202).sample(sorted(population), 40), where the population is the list
of (repository, file, function, code) tuples sorted by plain tuple order.

Run from the repository root: python3 tests/data/scan/audit/draw_sample.py
It prints the population sizes and the 40 sampled sites in sample order (the order of
flagged.toml's [[site]] entries). It reads only the committed TOML files; it runs no scanner.
"""

import random
import tomllib
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[1]
SPLITS = (("heldout10", "final"), ("heldout11", "final"), ("heldout12", "models"))
SEED = 20261202
SIZE = 40


def population():
    sites = {}
    raw = Counter()
    within = {}
    for split, tag in SPLITS:
        results = tomllib.loads((DATA / split / "results.toml").read_text())
        labels = tomllib.loads((DATA / split / "labels.toml").read_text())
        within[split] = set()
        for row in results[tag]["rows"]:
            if row["kind"] != "unlabelled" or not row["parent_fails"]:
                continue
            raw[split] += 1
            commits = [c for c in labels["commit"] if c["sha"].startswith(row["item"])]
            assert len(commits) == 1, row["item"]
            commit = commits[0]
            file, function = row["site"].split(" ", 1)
            key = (commit["repository"], file, function, row["code"])
            within[split].add(key)
            sites.setdefault(key, []).append((split, commit["sha"], commit["parent"]))
    return sites, raw, within


def main():
    sites, raw, within = population()
    print("rows:", dict(raw))
    print("distinct within each split:", {k: len(v) for k, v in within.items()})
    print("first seen in split:", dict(Counter(v[0][0] for v in sites.values())))
    print("population (distinct over the three splits):", len(sites))
    sample = random.Random(SEED).sample(sorted(sites), SIZE)
    for i, key in enumerate(sample):
        split, sha, parent = sites[key][0]
        print(i, split, key[0], sha[:10], parent[:10], key[1], key[2], "|", key[3])


if __name__ == "__main__":
    main()

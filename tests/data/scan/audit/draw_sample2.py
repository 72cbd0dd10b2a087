"""Redraw the second flagged-site audit sample (tests/data/scan/audit/flagged2.toml).

Population: the distinct sites (repository, file, function, code) of the rows with
kind = "unlabelled" and parent_fails = true in the [lists] table of the results.toml of held-out
splits 10, 11, 12 and 13 (tag `lists`, the newest engine), MINUS every site already labelled in
the first audit (flagged.toml). `file` is the file name as results.toml gives it (the name
without its folder); a flagged.toml site is matched on (repository, file name, function, code).
Each row's `item` (a short sha) is mapped to its commit, repository and parent through the same
split's labels.toml ([[commit]] entries; a commit without `repository` is
vllm-project/vllm-ascend). A site seen in several commits is read at its first occurrence
(splits in the order 10, 11, 12, 13, rows in file order); the other commits are listed too.

Sample: random.Random(20261203).sample(sorted(population), 40) (the whole population if it is
smaller), then sorted in plain tuple order: the order of flagged2.toml's [[site]] entries.

Run from the repository root: python3 tests/data/scan/audit/draw_sample2.py
It reads only committed TOML files; it runs no scanner.
"""

import random
import tomllib
from collections import Counter
from pathlib import Path

AUDIT = Path(__file__).resolve().parent
DATA = AUDIT.parent
SPLITS = ("heldout10", "heldout11", "heldout12", "heldout13")
TAG = "lists"
SEED = 20261203
SIZE = 40
DEFAULT_REPOSITORY = "vllm-project/vllm-ascend"


def load(path):
    return tomllib.loads(path.read_text())


def audited():
    """Sites of the first audit, keyed like the population (file name without its folder)."""
    return {
        (s["repository"], s["file"].rsplit("/", 1)[-1], s["function"], s["code"])
        for s in load(AUDIT / "flagged.toml")["site"]
    }


def commit_of(labels, item):
    found = [c for c in labels["commit"] if c["sha"].startswith(item)]
    if len(found) != 1:
        raise ValueError(f"short sha {item} matches {len(found)} commits")
    return found[0]


def population():
    """All unlabelled failing sites of the splits' [lists] tables, with where each was seen."""
    sites = {}
    distinct = {}
    for split in SPLITS:
        rows = load(DATA / split / "results.toml")[TAG]["rows"]
        labels = load(DATA / split / "labels.toml")
        distinct[split] = set()
        for row in rows:
            if row["kind"] != "unlabelled" or not row["parent_fails"]:
                continue
            commit = commit_of(labels, row["item"])
            file, function = row["site"].split(" ", 1)
            key = (commit.get("repository", DEFAULT_REPOSITORY), file, function, row["code"])
            distinct[split].add(key)
            sites.setdefault(key, []).append((split, commit["sha"], commit["parent"]))
    return sites, distinct


def main():
    sites, distinct = population()
    done = audited()
    print("distinct unlabelled sites within each split:", {k: len(v) for k, v in distinct.items()})
    print("distinct over the four splits:", len(sites))
    print("of them in flagged.toml (audit 1):", len(done & sites.keys()))
    pool = sorted(k for k in sites if k not in done)
    first = Counter(sites[k][0][0] for k in pool)
    print("population per split (first seen):", {s: first[s] for s in SPLITS})
    print("population per split (seen in):", {s: len(distinct[s] - done) for s in SPLITS})
    print("population:", len(pool))
    sample = sorted(random.Random(SEED).sample(pool, min(SIZE, len(pool))))
    for i, key in enumerate(sample):
        split, sha, parent = sites[key][0]
        others = sorted({f"{s} {c[:10]}" for s, c, _ in sites[key][1:] if c != sha})
        print(i, split, key[0], sha[:10], parent[:10], key[1], key[2], "|", key[3], "| also", others)


if __name__ == "__main__":
    main()

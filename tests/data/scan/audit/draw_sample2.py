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

Audit 3 (flagged3.toml) is drawn the same way from other splits, another engine's table and
another seed, leaving out the sites of every earlier audit:
python3 tests/data/scan/audit/draw_sample2.py --splits heldout14 heldout15 heldout16 \
    --tag settled --seed 20261204 --exclude flagged.toml flagged2.toml

Audit 4 (flagged4.toml) takes every site left in those splits that either engine fails, the one
audit 3 was drawn with (settled) or the next (environ), so that it also covers the sites the
environment rule made pass (its size exceeds the population, so the seed draws nothing):
python3 tests/data/scan/audit/draw_sample2.py --splits heldout14 heldout15 heldout16 \
    --tag settled environ --seed 20261205 --size 100 \
    --exclude flagged.toml flagged2.toml flagged3.toml
"""

import argparse
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


def audited(files):
    """Sites of earlier audits, keyed like the population (file name without its folder)."""
    return {
        (s["repository"], s["file"].rsplit("/", 1)[-1], s["function"], s["code"])
        for name in files for s in load(AUDIT / name)["site"]
    }


def commit_of(labels, item):
    found = [c for c in labels["commit"] if c["sha"].startswith(item)]
    if len(found) != 1:
        raise ValueError(f"short sha {item} matches {len(found)} commits")
    return found[0]


def population(splits, tags):
    """All unlabelled sites that the splits' ``tags`` tables fail, with where each was seen."""
    sites = {}
    distinct = {}
    for split in splits:
        results = load(DATA / split / "results.toml")
        rows = [row for tag in tags for row in results[tag]["rows"]]
        labels = load(DATA / split / "labels.toml")
        distinct[split] = set()
        for row in rows:
            if row["kind"] != "unlabelled" or not row["parent_fails"]:
                continue
            commit = commit_of(labels, row["item"])
            file, function = row["site"].split(" ", 1)
            key = (commit.get("repository", DEFAULT_REPOSITORY), file, function, row["code"])
            distinct[split].add(key)
            seen = sites.setdefault(key, [])
            if (split, commit["sha"], commit["parent"]) not in seen:
                seen.append((split, commit["sha"], commit["parent"]))
    return sites, distinct


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", nargs="+", default=list(SPLITS))
    parser.add_argument("--tag", nargs="+", default=[TAG],
                        help="results.toml tables (engines); a site any of them fails is drawn")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--size", type=int, default=SIZE)
    parser.add_argument("--exclude", nargs="+", default=["flagged.toml"],
                        help="earlier audits whose sites are left out")
    args = parser.parse_args()
    sites, distinct = population(args.splits, args.tag)
    done = audited(args.exclude)
    print("distinct unlabelled sites within each split:", {k: len(v) for k, v in distinct.items()})
    print("distinct over the splits:", len(sites))
    print(f"of them in {', '.join(args.exclude)}:", len(done & sites.keys()))
    pool = sorted(k for k in sites if k not in done)
    first = Counter(sites[k][0][0] for k in pool)
    print("population per split (first seen):", {s: first[s] for s in args.splits})
    print("population per split (seen in):", {s: len(distinct[s] - done) for s in args.splits})
    print("population:", len(pool))
    sample = sorted(random.Random(args.seed).sample(pool, min(args.size, len(pool))))
    for i, key in enumerate(sample):
        split, sha, parent = sites[key][0]
        others = sorted({f"{s} {c[:10]}" for s, c, _ in sites[key][1:] if c != sha})
        print(i, split, key[0], sha[:10], parent[:10], key[1], key[2], "|", key[3], "| also", others)


if __name__ == "__main__":
    main()

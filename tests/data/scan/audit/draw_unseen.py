"""Draw audit 5 (tests/data/scan/audit/flagged5.toml): failing sites in code no one scored before.

Audits 1-4 drew from the parents of held-out sync-fix commits, and by audit 4 every such site
was used. This one scans the newest snapshot of five mirrored repositories whole
(tests/data/scan/unseen/trees.toml) with the working tree's scan, and keeps each failing site
(file name, function, code line) that nothing recorded before names: no label of a held-out
split, no row of any results.toml table, no site of audits 1-4, no sweep or in-sample corpus
label. A recorded site names a flagged one when their file names and functions are equal and
one code text contains the other (labels keep a piece of the line). Sites are de-duplicated over
the trees in the order of trees.toml; the sample is
``sorted(random.Random(SEED).sample(sorted(population), SIZE))`` of the
(repository, file, function, code) tuples, printed one per line with its index.

Run from the repository root, after the engine is frozen and before any label:
    .venv/bin/python tests/data/scan/audit/draw_unseen.py --mirrors /work/.mirror
Audit 6 (flagged6.toml) is drawn the same way with the engine of the commit that adds this line,
after audit 5's sites were labelled (they are recorded sites now), with another seed:
    .venv/bin/python tests/data/scan/audit/draw_unseen.py --mirrors /work/.mirror --seed 20261207
Audit 7 (flagged7.toml): drawn with the engine of the commit that adds this line, after audit 6's
sites were labelled, with another seed (179 sites left: 171 vLLM-Omni, 8 Kunlun-Exp):
    .venv/bin/python tests/data/scan/audit/draw_unseen.py --mirrors /work/.mirror --seed 20261208
Audit 8 (flagged8.toml): drawn with the engine of the commit before the one that adds this line
(1bc9aa5), after audit 7's sites were labelled, with another seed (137 sites left: 130 vLLM-Omni,
7 Kunlun-Exp):
    .venv/bin/python tests/data/scan/audit/draw_unseen.py --mirrors /work/.mirror --seed 20261209
Audit 9 (flagged9.toml): drawn with the engine of the commit before the one that adds this line
(86ff1a5: wrapped objects, named architectures, contradictory routes), after audit 8's sites
were labelled, with another seed (95 sites left: 90 vLLM-Omni, 5 Kunlun-Exp):
    .venv/bin/python tests/data/scan/audit/draw_unseen.py --mirrors /work/.mirror --seed 20261210
Audit 10 (flagged10.toml): drawn with the engine of the commit before the one that adds this line
(be97a1e, whose judgements are 86ff1a5's), after audit 9's sites were labelled, with another seed
(55 sites left: 52 vLLM-Omni, 3 Kunlun-Exp):
    .venv/bin/python tests/data/scan/audit/draw_unseen.py --mirrors /work/.mirror --seed 20261211
Audit 11 (flagged11.toml): the first trees had 15 sites left, so it draws from new ones
(tests/data/scan/unseen2/trees.toml: vLLM main's models and layers, Gaudi, Kunlun and the
DeepSeek-V4 vllm-ascend fork), with the engine of the commit before the one that adds this line
(3451043: a parameter's fallback that every call fills is not run), after audit 10's sites were
labelled (41 sites: 22 vLLM main, 15 Gaudi, 4 Kunlun):
    .venv/bin/python tests/data/scan/audit/draw_unseen.py --mirrors /work/.mirror --trees unseen2 \
        --seed 20261212
Audit 12 (flagged12.toml): from third trees (tests/data/scan/unseen3: vllm-ascend main's model,
op and quantization packages, an older vLLM main and the V100 fork with their models and
layers, an older vLLM-Omni fork), with the engine of the commit before the one that adds this
line (50c15ac: model slots hold what builds them), after audit 11's sites were labelled (58
sites: 28 1Cat-vLLM, 21 vLLM-Omni fork, 5 vllm-ascend, 4 older vLLM main):
    .venv/bin/python tests/data/scan/audit/draw_unseen.py --mirrors /work/.mirror --trees unseen3 \
        --seed 20261213
Audit 13 (flagged13.toml): from fourth trees (tests/data/scan/unseen4: upstream vLLM-Omni of
2025-12, Habana's and ROCm's vLLM forks with their models and layers), with the engine of the
commit before the one that adds this line (9aa2796: variables envs.py leaves unset are opt-in),
after audit 12's sites were labelled (64 sites: 43 Habana, 17 ROCm, 4 vLLM-Omni):
    .venv/bin/python tests/data/scan/audit/draw_unseen.py --mirrors /work/.mirror --trees unseen4 \
        --seed 20261214
"""

from __future__ import annotations

import argparse
import random
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
DATA = ROOT / "tests" / "data" / "scan"
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_heldout as heldout  # noqa: E402
from vllm_syncgate.scan.sweep import failing_sites  # noqa: E402

SEED = 20261206
SIZE = 40


def load(path: Path) -> dict:
    return tomllib.loads(path.read_text())


def recorded() -> set[tuple[str, str, str]]:
    """(file name, function, code) of every site a label, a results row or an audit names."""
    known = set()

    def add(file: str, function: str, code: str) -> None:
        known.add((file.rsplit("/", 1)[-1], function, code.strip()))

    for split in sorted(DATA.glob("heldout*")):
        labels = load(split / "labels.toml")
        for item in [*labels.get("commit", []), *labels.get("pair", []),
                     *labels.get("release", [])]:
            for site in item.get("site", []):
                add(site["file"], site["function"], site["code"])
        results = split / "results.toml"
        for table in load(results).values() if results.exists() else []:
            for row in table.get("rows", []) if isinstance(table, dict) else []:
                if row.get("code"):
                    file, _, function = row["site"].partition(" ")
                    add(file, function, row["code"])
    for audit in sorted((DATA / "audit").glob("flagged*.toml")):
        for site in load(audit)["site"]:
            add(site["file"], site["function"], site["code"])
    for table in (DATA / "sweep.toml", DATA / "sweep_attention_review.toml",
                  DATA.parent / "scan-corpus" / "labels.toml"):
        for release in load(table).get("release", []):
            for site in release.get("site", []):
                add(site["file"], site["function"], site["code"])
    return known


def named(known: set[tuple[str, str, str]], file: str, function: str, code: str) -> bool:
    name = file.rsplit("/", 1)[-1]
    return any(f == name and fn == function and (c in code or code in c)
               for f, fn, c in known if c)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--size", type=int, default=SIZE)
    parser.add_argument("--trees", default="unseen", help="the folder under tests/data/scan whose "
                        "trees.toml lists the snapshots (unseen2: audit 11 on)")
    args = parser.parse_args()
    known = recorded()
    population: dict[tuple[str, str, str, str], dict] = {}
    seen: set[tuple[str, str, str]] = set()
    for commit in load(DATA / args.trees / "trees.toml")["commit"]:
        git = heldout._repository(commit, "", args.mirrors)
        if not git:
            return 2
        root = heldout._tree(git, commit["parent"], heldout._members(commit))
        failing = failing_sites(heldout._scan(root, commit), root)
        fresh = 0
        for text in failing:
            where, _, code = text.partition(": ")
            location, _, function = where.partition(" ")
            file, _, line = location.rpartition(":")
            key = (file.rsplit("/", 1)[-1], function, code.strip())
            if key in seen or named(known, file, function, code.strip()):
                continue
            seen.add(key)
            fresh += 1
            population[(commit["repository"], file, function, code.strip())] = {
                "sha": commit["sha"], "line": int(line)}
        print(f"{commit['repository']}: {len(failing)} failing sites, {fresh} never recorded")
    print("population:", len(population))
    sample = sorted(random.Random(args.seed).sample(sorted(population),
                                                    min(args.size, len(population))))
    for index, key in enumerate(sample):
        where = population[key]
        print(index, args.trees, key[0], where["sha"][:10], f"{key[1]}:{where['line']}", key[2],
              "|", key[3])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

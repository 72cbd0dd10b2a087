"""A precision audit (tests/data/scan/audit/flagged*.toml) scored by the working tree's scan.

The audit labels a seeded sample of flagged sites that no held-out label covers, from the source
of each commit's parent: ``real_default`` (what the gate promises to fail), ``real_mode`` (a
real sync of an opt-in path) or ``not_sync``. The labels were drawn from one engine's output; a
later engine may stop failing some of them. This scans each parent again, as bench_heldout does
(the commit's ``paths``, ``base`` and ``profile`` from its split's labels), and reports per label
how many sites still fail, with the precision of what still fails: ``real_default`` over the
sites still failing. The sites are dev data once read: a rule written after reading them is
measured here in sample, not out of it. Needs the mirrors of the audited repositories
(``--mirrors``, ``OWNER+NAME/repo``). Prints a table, writes benchmarks/results/audit-<tag>.json.

    .venv/bin/python benchmarks/bench_audit.py --mirrors /work/.mirror [--tag now] \
        [--audit tests/data/scan/audit/flagged2.toml]

With ``--audit`` another sample (audit 2: ``flagged2.toml``); its results are named
``audit-<sample>-<tag>``. Audit 5's sites (split ``unseen``) come from whole snapshots, whose
entries tests/data/scan/unseen/trees.toml gives.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import bench_heldout as heldout
from _table import emit
from vllm_syncgate.scan.corpus import ratio
from vllm_syncgate.tomlfile import read_toml

AUDIT = Path(__file__).parents[1] / "tests" / "data" / "scan" / "audit" / "flagged.toml"
LABELS = ("real_default", "real_mode", "not_sync")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=Path(os.environ.get("SYNCGATE_MIRRORS", "")),
                        help="the folder of the audited repositories' mirrors (OWNER+NAME/repo)")
    parser.add_argument("--tag", default="now", help="which scanner this is")
    parser.add_argument("--audit", type=Path, default=AUDIT, help="the labelled sample")
    args = parser.parse_args()
    sites = read_toml(args.audit)["site"]
    scans: dict[tuple[str, str], tuple[Path, dict]] = {}
    rows = []
    for site in sites:
        key = (site["split"], site["commit"])
        if key not in scans:
            commit = _commit(*key)
            git = heldout._repository(commit, "", args.mirrors)
            if not git:
                return 2
            root = heldout._tree(git, commit["parent"], heldout._members(commit))
            scans[key] = (root, heldout._scan(root, commit))
        root, found = scans[key]
        fails = heldout._failing_at(found, root, site["file"], site["function"], site["code"])
        rows.append({"index": site["index"], "label": site["label"], "still_fails": fails,
                     "site": f"{Path(site['file']).name} {site['function']}"})
    name = "audit" if args.audit.resolve() == AUDIT.resolve() else f"audit-{args.audit.stem}"
    emit(f"{name}-{args.tag}", rows, _summary(args.tag, rows))
    return 0


def _commit(split: str, sha: str) -> dict[str, Any]:
    """The commit entry of ``sha``: a held-out split's labels.toml, or the trees.toml of the
    whole snapshots audit 5 drew from (tests/data/scan/unseen)."""
    folder = AUDIT.parents[1] / split
    labels = read_toml(folder / "labels.toml" if (folder / "labels.toml").exists()
                       else folder / "trees.toml")
    found = [c for c in labels.get("commit", []) if c["sha"] == sha]
    if not found:
        print(f"bench_audit: {sha} is not a commit of {split}", file=sys.stderr)
        raise SystemExit(2)
    return found[0]


def _summary(tag: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    kept = {label: sum(r["still_fails"] for r in rows if r["label"] == label) for label in LABELS}
    total = {label: sum(r["label"] == label for r in rows) for label in LABELS}
    failing = sum(kept.values())
    return {"scanner": tag, "sample": len(rows),
            "still_failing": {label: f"{kept[label]}/{total[label]}" for label in LABELS},
            "precision_default": ratio(kept["real_default"], failing),
            "precision_real_sync": ratio(kept["real_default"] + kept["real_mode"], failing)}


if __name__ == "__main__":
    raise SystemExit(main())

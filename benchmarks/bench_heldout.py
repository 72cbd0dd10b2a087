"""Held-out precision and recall of the scan (issue 20 item 7), next to the in-sample corpus.

A split is a labels file (``--labels``, default the first split tests/data/scan/heldout/
labels.toml; the second, tests/data/scan/heldout2/, was labelled after the first had been seen;
the third, tests/data/scan/heldout3/, holds vLLM release pairs; the fourth, tests/data/scan/
heldout4/, commits and pairs whose sites lie beyond the scan's default scope, in attention
metadata builders and ops, each item naming the ``paths`` its scan needs). Held-out commits come
from a local git clone of vllm-ascend (``--git``; CI has no GitHub, so this runs where a clone
exists): the parent and the fix are extracted with ``git archive`` (vllm_ascend/worker, sample,
spec_decode and the commit's extra paths) into ``<cache>/heldout/<sha>/`` and scanned as a user
would, ``vllm_ascend/worker`` plus the commit's extra paths (or the commit's own ``paths``), with
the vLLM release it builds on (its CPU wheel's v1/worker) and the npu budget. A ``default`` site
is recalled when the parent fails the gate on it and the fix is clean there; a ``mode`` site
failing is a false alarm. Held-out releases (CPU wheels from the index) registered 0 default
sites, so each of their failing sites is a false alarm. A release pair (``[[pair]]``: a sync in
release ``before`` gone or fixed in the next release ``after``) is judged like a commit: both
releases' trees (the sweep's extracted wheels, or the wheels extracted again into
``<cache>/heldout-attn/`` when the pair's paths reach beyond what the sweep keeps) are scanned
with the pair's paths and profile, ``before`` standing for the parent and ``after`` for the fix.
A commit of another repository (a vLLM hardware plugin: ``repository = "OWNER/NAME"``, split 8)
comes from its local mirror under ``--mirrors`` (``<dir>/OWNER+NAME/repo``, as ``fetch`` lays them
out); the packages its ``paths`` lie in are extracted whole and its ``paths`` scanned with its
``profile``. Failing sites of the commit and pair trees that no label names are counted apart
(``unlabelled``; summary key ``unlabelled_commit_sites``): judging them after the fact would not
be held out. Prints a table, writes benchmarks/results/<split>-<tag>.json and, with --write,
results.toml next to the labels file (the figures the test checks).

    .venv/bin/python benchmarks/bench_heldout.py --git /path/to/vllm-ascend [--write] [--tag after]
        [--labels tests/data/scan/heldout2/labels.toml]
    .venv/bin/python benchmarks/bench_heldout.py --labels tests/data/scan/heldout3/labels.toml
    .venv/bin/python benchmarks/bench_heldout.py --mirrors /work/.mirror \
        --labels tests/data/scan/heldout8/labels.toml
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from _table import emit
from vllm_syncgate.release_files import fetch_members
from vllm_syncgate.reportfiles import user_cache_dir
from vllm_syncgate.scan.corpus import (
    evaluate,
    in_source,
    load_corpus,
    ratio,
    relative_to,
    scan_tree,
    source_root,
    totals,
)
from vllm_syncgate.scan.sweep import PROJECTS, failing_sites, find, release_root
from vllm_syncgate.tomlfile import read_toml

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "tests/data/scan/heldout/labels.toml"
CORPUS = ROOT / "tests/data/scan-corpus/labels.toml"
# vllm_ascend/__init__.py too: module names (which the npu budget's allow rules name) come from
# the enclosing packages
TREE = ("vllm_ascend/__init__.py", "vllm_ascend/worker", "vllm_ascend/sample",
        "vllm_ascend/spec_decode")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git", default=os.environ.get("SYNCGATE_ASCEND_GIT", ""),
                        help="a clone (or bare repository) of vllm-ascend")
    parser.add_argument("--mirrors", type=Path, default=Path(os.environ.get("SYNCGATE_MIRRORS", "")),
                        help="the folder of other repositories' mirrors (OWNER+NAME/repo)")
    parser.add_argument("--tag", default="after", help="which scanner this is (results key)")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--no-in-sample", action="store_true")
    parser.add_argument("--labels", type=Path, default=LABELS,
                        help="the split's labels.toml (its results.toml is written next to it)")
    args = parser.parse_args()
    labels = read_toml(args.labels)
    rows: list[dict[str, Any]] = []
    commit_rows = []
    for commit in labels.get("commit", []):
        git = _repository(commit, args.git, args.mirrors)
        if git:
            commit_rows.append(_commit(git, commit))
    for site_rows in [*commit_rows, *(_pair(p) for p in labels.get("pair", []))]:
        rows.extend(site_rows)
    release_rows = [_release(r) for r in labels.get("release", [])]
    rows.extend(release_rows)
    held = _figures([r for r in rows if r["kind"] != "unlabelled"])
    strict = _figures([r for r in rows if r["kind"] != "unlabelled" and not r["in_sample_too"]])
    summary: dict[str, Any] = {"scanner": args.tag, "held_out": held,
                               "held_out_not_in_corpus": strict,
                               "unlabelled_commit_sites": sum(r["kind"] == "unlabelled" for r in rows)}
    if not args.no_in_sample:
        summary["in_sample"] = _in_sample()
    emit(f"{args.labels.parent.name}-{args.tag}", rows, summary)
    if args.write:
        _write(args.labels.parent / "results.toml", args.tag, rows, summary)
    return 0


def _figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tp = sum(r["outcome"] == "tp" for r in rows)
    fn = sum(r["outcome"] == "fn" for r in rows)
    fp = sum(r.get("fp_sites", 1) for r in rows if r["outcome"] == "fp")  # a release: per site
    return {"tp": tp, "fp": fp, "fn": fn, "recall": ratio(tp, tp + fn), "precision": ratio(tp, tp + fp)}


def _in_sample() -> dict[str, Any]:
    scores = []
    for release in load_corpus(CORPUS):
        score, _ = evaluate(release, source_root(release.source))
        scores.append(score)
    return totals(scores)


def _repository(commit: dict[str, Any], ascend_git: str, mirrors: Path) -> str:
    """The git directory a commit comes from: ``--git`` for vllm-ascend's, the mirror of its
    ``repository`` for another's; "" when it is not here (its rows are left out)."""
    name = commit.get("repository", "")
    if not name:
        return ascend_git
    git = mirrors / name.replace("/", "+") / "repo"
    if not git.is_dir():
        print(f"bench_heldout: no mirror of {name} at {git}; its commit is left out", file=sys.stderr)
        return ""
    return str(git)


def _members(commit: dict[str, Any]) -> tuple[str, ...]:
    """What is extracted of a commit: vllm-ascend's runner packages plus its paths, or for
    another repository the whole packages its paths lie in (the scan follows their imports)."""
    paths = _paths(commit)
    if not commit.get("repository"):
        return (*TREE, *(p for p in paths if p not in TREE))
    return tuple(sorted({p.split("/")[0] for p in paths}))


def _tree(git: str, rev: str, members: tuple[str, ...]) -> Path:
    # the members are part of the key: the same commit extracted with other paths differs
    if members[:len(TREE)] == TREE:  # the key vllm-ascend's trees have always had
        key = "".join(f"+{p.replace('/', '.')}" for p in members[len(TREE):])
        dest = user_cache_dir() / "heldout" / f"{rev}-{len(TREE)}{key}"
    else:
        key = hashlib.sha256("\0".join(members).encode()).hexdigest()[:8]
        dest = user_cache_dir() / "heldout" / f"{rev}-{key}"
    if dest.is_dir():
        return dest
    listed = subprocess.run(["git", "-C", git, "ls-tree", "--name-only", rev, *members],
                            check=True, capture_output=True, text=True).stdout.split()
    archive = subprocess.run(["git", "-C", git, "archive", "--format=tar", rev, *listed],
                             check=True, capture_output=True).stdout
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".extract-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, members=[m for m in tar if m.name.endswith(".py")], filter="data")
        os.replace(tmp, dest)
        os.mkdir(tmp)
    return dest


def _scan(root: Path, commit: dict[str, Any]) -> dict:
    base = None
    if commit.get("base"):
        project, _, version = commit["base"].partition("==")
        base = release_root(find(project, version))
    return scan_tree(root, _paths(commit), commit.get("profile", "npu"), base).sites


def _paths(commit: dict[str, Any]) -> tuple[str, ...]:
    """What a commit's scan reads: its own ``paths`` (split 4), else the runner's package and
    the commit's extra paths."""
    return tuple(commit.get("paths") or ("vllm_ascend/worker", *commit.get("extra_paths", ())))


def _failing_at(sites: dict, root: Path, file: str, function: str, code: str) -> bool:
    return any(any(x.gates for x in g) for g in _groups_at(sites, root, file, function, code))


def _groups_at(sites: dict, root: Path, file: str, function: str, code: str) -> list[list]:
    return [g for (f, _), g in sites.items()
            if relative_to(f, root) == file and g[0].qualname == function and code in g[0].code]


def _missed_as(sites: dict, root: Path, file: str, function: str, code: str) -> str:
    """Why a default site the parent does not fail at was missed: the guards the scan gave
    its findings there (``unknown_residence``, ``opt_in``, ...), or ``unreached`` when the
    scan reports nothing at it (no path from an entry, or no rule for the line)."""
    guards = sorted({x.guard for g in _groups_at(sites, root, file, function, code) for x in g})
    return ",".join(guards) or "unreached"


def _item_name(commit: dict[str, Any]) -> str:
    """A commit's row name: ``#<pr> <sha10>``, the SHA alone for a commit without a PR number."""
    return f"#{commit['pr']} {commit['sha'][:10]}" if commit.get("pr") else commit["sha"][:10]


def _commit(git: str, commit: dict[str, Any]) -> list[dict[str, Any]]:
    members = _members(commit)
    started = time.perf_counter()
    before_root = _tree(git, commit["parent"], members)
    after_root = _tree(git, commit["sha"], members)
    before = (before_root, _scan(before_root, commit))
    after = (after_root, _scan(after_root, commit))
    project = commit.get("repository", "vllm-ascend").rpartition("/")[2]
    rows = _judge(_item_name(commit), "commit", commit["site"], before, after, project)
    rows[0]["seconds"] = round(time.perf_counter() - started, 1)
    return rows


def _pair(pair: dict[str, Any]) -> list[dict[str, Any]]:
    """The sites of a release pair: ``before`` scanned as the parent, ``after`` as the fix."""
    started = time.perf_counter()
    scanned = []
    for source in (pair["before"], pair["after"]):
        root = _release_tree(source, pair["paths"])
        scanned.append((root, scan_tree(root, tuple(pair["paths"]), pair["profile"]).sites))
    project = pair["before"].partition("==")[0]
    rows = _judge(f"{pair['before']} -> {pair['after']}", "pair", pair["site"], *scanned, project)
    rows[0]["seconds"] = round(time.perf_counter() - started, 1)
    return rows


def _release_tree(source: str, paths: list[str]) -> Path:
    """``source``'s extracted wheel: the sweep's tree when it keeps ``paths``, else the wheel
    extracted again with ``paths`` added (under ``<cache>/heldout-attn/``)."""
    project, _, version = source.partition("==")
    item = find(project, version)
    keep = PROJECTS[project].keep
    extra = [p for p in paths if not any(p == k or p.startswith(k) or (p + "/").startswith(k)
                                         for k in keep)]
    if not extra:
        return release_root(item)
    wanted = (*keep, *(p if p.endswith(".py") else f"{p}/" for p in extra))
    kept = hashlib.sha256("\0".join(wanted).encode()).hexdigest()[:8]
    return fetch_members(item, wanted, user_cache_dir() / "heldout-attn" / f"{project}-{version}-{kept}")


def _judge(item: str, kind: str, labelled: list[dict[str, Any]], before: tuple[Path, dict],
           after: tuple[Path, dict], project: str) -> list[dict[str, Any]]:
    """One row per labelled site (a default site is recalled when ``before`` fails at it and
    ``after`` is clean at its fixed line; a mode site failing is a false alarm), then one
    ``unlabelled`` row per failing site of ``before`` that no label names."""
    (before_root, before_sites), (after_root, after_sites) = before, after
    rows = []
    named = set()
    for site in labelled:
        fails = _failing_at(before_sites, before_root, site["file"], site["function"], site["code"])
        fixed = site["fixed"] or site["code"]
        still = _failing_at(after_sites, after_root, site["file"], site["function"], fixed)
        outcome = {(True, True): "tp", (True, False): "fn", (False, True): "fp",
                   (False, False): "tn"}[(site["label"] == "default", fails and not still
                                          if site["label"] == "default" else fails)]
        named.add((site["file"], site["function"], site["code"]))
        row = _row(item, kind, site["file"], site["function"], site["kind"], site["label"],
                   fails, still, outcome)
        row["in_sample_too"] = _in_corpus(site["file"], site["function"], site["code"], project)
        if site["label"] == "default" and not fails:
            row["missed_as"] = _missed_as(before_sites, before_root, site["file"],
                                          site["function"], site["code"])
        rows.append(row)
    for text in failing_sites(before_sites, before_root):
        where, _, code = text.partition(": ")
        location, _, function = where.partition(" ")
        file = location.rsplit(":", 1)[0]
        if not any(f == file and fn == function and c in code for f, fn, c in named):
            row = _row(item, "unlabelled", file, function, "", "", True, False, "")
            row["code"] = code
            rows.append(row)
    return rows


def _in_corpus(file: str, function: str, code: str, project: str) -> bool:
    """Whether the site's code is also in an in-sample corpus release of ``project`` (the
    held-out item is then not independent of what the scanner was tuned on)."""
    return any(in_source(source_root(r.source) / file, function, code) for r in load_corpus(CORPUS)
               if r.source.startswith(f"{project}=="))


def _row(item: str, kind: str, file: str, function: str, sync: str, label: str,
         fails: bool, still: bool, outcome: str) -> dict[str, Any]:
    return {"kind": kind, "item": item,
            "site": f"{file.rsplit('/', 1)[-1]} {function}", "sync": sync, "label": label,
            "parent_fails": fails, "fix_fails": still, "outcome": outcome, "seconds": None,
            "in_sample_too": None}


def _release(release: dict[str, Any]) -> dict[str, Any]:
    project, _, version = release["source"].partition("==")
    root = release_root(find(project, version))
    tree = scan_tree(root, tuple(release["paths"]), release["profile"])
    failing = failing_sites(tree.sites, root)
    fp = max(0, len(failing) - release["default_sites"])
    return {"kind": "release", "item": release["source"], "site": f"{len(failing)} failing",
            "sync": "", "label": f"{release['default_sites']} default", "parent_fails": None,
            "fix_fails": None, "outcome": "fp" if fp else "tn", "seconds": round(tree.seconds, 1),
            "in_sample_too": False, "fp_sites": fp}


def _write(results: Path, tag: str, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    data = read_toml(results) if results.is_file() else {}
    data[tag] = {"rows": [{k: v for k, v in r.items() if v is not None} for r in rows],
                 "summary": summary}
    results.write_text(_dump(data))
    print(f"wrote {results}")


def _dump(data: dict[str, Any]) -> str:
    lines = ["# Written by benchmarks/bench_heldout.py --write: the held-out figures per scanner.",
             "# tests/ut/scan/test_scan_heldout.py checks them against labels.toml.", ""]
    for tag, block in data.items():
        lines.append(f"[{tag}]")
        lines.append(f"summary = {_inline(block['summary'])}")
        lines.append("rows = [")
        lines += [f"    {_inline(r)}," for r in block["rows"]]
        lines += ["]", ""]
    return "\n".join(lines)


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_inline(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


if __name__ == "__main__":
    sys.exit(main())

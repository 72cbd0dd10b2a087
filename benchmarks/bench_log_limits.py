"""Hostile logs against ``syncgate repro --list``: peak RSS and wall time stay bounded.

Four logs are generated in a temp dir (nothing is kept): a 1 GiB pytest log with a failure every
64k lines (streamed: the target is under 100 MB of RSS), a 200 MB log with no newline at all (a
line is cut at --max-line-length, the rest skipped), a zip whose one member inflates to 1 GiB
(read up to --max-log-bytes; with 256M it is a one-line error within seconds) and the same zip
under the default cap. Each row is one ``syncgate repro --list`` in a fresh process; RSS is the
child's ru_maxrss.

Run: .venv/bin/python benchmarks/bench_log_limits.py [--gib 1]
     (writes benchmarks/results/log_limits.json)
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from _table import emit

RSS_TARGET_MB = 100
SYNCGATE = [sys.executable, "-m", "vllm_syncgate.cli"]


def big_pytest_log(path: Path, size: int) -> int:
    """A verbose pytest log of ``size`` bytes; returns how many FAILED lines it holds."""
    line = "tests/ut/test_mod.py::test_case[{i}] PASSED                                [ 50%]\n"
    failures = 0
    with path.open("w") as out:
        written, i = 0, 0
        block = []
        while written < size:
            i += 1
            text = (f"FAILED tests/ut/test_mod.py::test_case[{i}] - assert 0\n" if i % 65536 == 0
                    else line.format(i=i))
            failures += i % 65536 == 0
            block.append(text)
            written += len(text)
            if len(block) == 4096:
                out.write("".join(block))
                block.clear()
        out.write("".join(block) + "== 1 failed, 2 passed in 9.99s ==\n")
    return failures


def no_newline_log(path: Path, size: int) -> None:
    chunk = b"x" * (1 << 20)
    with path.open("wb") as out:
        out.write(b"tests/t.py::test_a PASSED\n")
        for _ in range(size >> 20):
            out.write(chunk)


def inflating_zip(path: Path, size: int) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, \
            archive.open("1_job.txt", "w", force_zip64=True) as member:
        member.write(b"tests/t.py::test_a PASSED\n")
        chunk = b"y" * (1 << 20)
        for _ in range(size >> 20):
            member.write(chunk)


def run_list(log: Path, *extra: str) -> dict[str, object]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    proc = subprocess.run([*SYNCGATE, "repro", "--list", str(log), *extra],
                          capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"exit": proc.returncode, "wall_s": round(wall, 1),
            # ru_maxrss of children is the max over all of them: only a rise is this run's
            "peak_rss_mb": round(max(peak_kib, before) / 1024, 1),
            "stdout_lines": len(proc.stdout.splitlines()),
            "stderr": proc.stderr.strip().splitlines()[-1][:90] if proc.stderr.strip() else ""}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    args = parser.parse_args()
    size = int(args.gib * (1 << 30))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-log-limits-") as tmp:
        tmpdir = Path(tmp)
        # smallest first: ru_maxrss of children only ever rises
        cases = [
            ("no newline, 200 MB", lambda p: no_newline_log(p, 200 << 20), "log.txt", ()),
            ("zip inflating to 1 GiB, --max-log-bytes 256M", lambda p: inflating_zip(p, size),
             "bomb.zip", ("--max-log-bytes", "256M")),
            ("zip inflating to 1 GiB, default cap", None, "bomb.zip", ()),
            (f"pytest log, {args.gib:g} GiB", lambda p: big_pytest_log(p, size), "big.log", ()),
        ]
        for name, make, file, extra in cases:
            path = tmpdir / file
            if make is not None:
                make(path)
            row = {"log": name, "bytes_on_disk": os.path.getsize(path), **run_list(path, *extra)}
            rows.append(row)
            if make is not None and file != "bomb.zip":
                path.unlink()
    worst = max(float(r["peak_rss_mb"]) for r in rows)
    emit("log_limits", rows, {"peak_rss_mb_worst": worst, "rss_target_mb": RSS_TARGET_MB,
                              "within_target": worst < RSS_TARGET_MB})


if __name__ == "__main__":
    main()

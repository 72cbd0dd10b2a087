"""The scan's file-reading boundary: only regular files, and a per-file budget (scan.sources)."""

from __future__ import annotations

import os

from vllm_syncgate.scan.sources import FileBudget, build_index

RUNNER = "class GPUModelRunner:\n    def execute_model(self):\n        return 1\n"


def _problems(index):
    return {p.file.rsplit("/", 1)[-1]: p.reason for p in [*index.problems, *index.skipped]}


def test_fifo_symlink_loop_and_over_budget_files_are_skipped_and_the_rest_scanned(tmp_path):
    (tmp_path / "runner.py").write_text(RUNNER)
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "loop.py").symlink_to("loop.py")
    (tmp_path / "big.py").write_text("x = 1\n" * 70_000)
    (tmp_path / "deep.py").write_text("x = " + "+".join(["a"] * 300) + "\n")
    (tmp_path / "bomb.py").write_text("x = " + "-" * 200_000 + "1\n")
    index = build_index([str(tmp_path)], FileBudget(max_bytes=300_000, max_depth=100))
    assert [m.path.name for m in index.modules] == ["runner.py"]
    problems = _problems(index)
    assert problems["fifo.py"] == "cannot be read (not a regular file)"
    assert problems["loop.py"].startswith("cannot be read (")
    assert problems["big.py"] == "larger than 300000 bytes (--max-file-bytes)"
    assert problems["deep.py"] == "syntax nested deeper than 100 levels (--max-file-depth)"
    assert problems["bomb.py"] == "nested too deeply to parse"


def test_the_time_budget_skips_a_slow_file():
    index = build_index([__file__], FileBudget(max_seconds=1e-9))
    assert index.modules == []
    assert "to read and parse (--max-file-seconds 1e-09)" in index.skipped[0].reason


def test_default_budget_takes_ordinary_files(tmp_path):
    (tmp_path / "runner.py").write_text(RUNNER)
    assert [m.path.name for m in build_index([str(tmp_path)]).modules] == ["runner.py"]

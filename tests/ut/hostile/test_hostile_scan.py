"""Hostile trees and options against ``syncgate scan``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

RUNNER = ("class GPUModelRunner:\n    def execute_model(self):\n"
          "        torch.cuda.synchronize()\n")


def _tree(work: Path) -> Path:
    tree = work / "src"
    tree.mkdir()
    (tree / "runner.py").write_text(RUNNER)
    return tree


def _fifo(tree: Path) -> None:
    os.mkfifo(tree / "fifo.py")


def _loop(tree: Path) -> None:
    (tree / "loop.py").symlink_to("loop.py")
    (tree / "up").symlink_to("..")


def _deep(tree: Path) -> None:
    (tree / "deep.py").write_text("x = " + "+".join(["a"] * 300) + "\n")


def _unary_bomb(tree: Path) -> None:
    (tree / "bomb.py").write_text("x = " + "-" * 300_000 + "1\n")


def _huge(tree: Path) -> None:
    (tree / "huge.py").write_text("y = 1\n" * 600_000)  # 3.6 MB, over the 2 MiB default


# (id, add hostile files to the tree, extra args, exit code, last stderr line)
TREE_PROBES = [
    ("fifo-named-py", _fifo, [], 1, r"fifo\.py: cannot be read \(not a regular file\)"),
    ("symlink-loop", _loop, [], 1, r"loop\.py: cannot be read \(Too many levels"),
    ("expression-chain", _deep, [], 1, r"deep\.py: syntax nested deeper than 100 levels"),
    ("unary-bomb", _unary_bomb, [], 1, r"bomb\.py: nested too deeply to parse"),
    ("huge-file", _huge, [], 1, r"huge\.py: larger than 2097152 bytes"),
]


@pytest.mark.parametrize(("make", "extra", "code", "stderr"), [p[1:] for p in TREE_PROBES],
                         ids=[p[0] for p in TREE_PROBES])
def test_hostile_file_is_skipped_and_the_rest_scanned(sandbox, handled, make, extra, code, stderr):
    tree = _tree(sandbox.work)
    make(tree)
    outcome = sandbox.run(["scan", "src", "--device", "cpu", *extra])
    handled(outcome, code, stderr)
    # the rest was still scanned (issue 17's text: one block per site, "FILE:LINE: ... FAIL")
    assert "src/runner.py:3: device_sync torch.cuda.synchronize in GPUModelRunner.execute_model  FAIL" \
        in outcome.stdout


def _budget(work: Path, text: str | bytes) -> str:
    path = work / "budget.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return "budget.toml"


def _fifo_budget(work: Path) -> str:
    os.mkfifo(work / "budget.toml")
    return "budget.toml"


OPTION_PROBES = [
    ("path-missing", lambda w: ["scan", "nowhere"], r"nowhere: no such file or directory"),
    ("only-binary", lambda w: [*_bin(w), "--device", "cpu"], r"nothing could be scanned"),
    ("only-syntax-error", lambda w: [*_syntax(w), "--device", "cpu"],
     r"nothing could be scanned: .*syntax error"),
    ("profile-unknown", lambda w: ["scan", str(_tree(w)), "--profile", "bogus"],
     r"bogus: <file>: does not exist"),
    ("device-unknown", lambda w: ["scan", str(_tree(w)), "--device", "tpu"],
     r"--device: invalid choice: 'tpu'"),
    ("budget-missing", lambda w: ["scan", str(_tree(w)), "--budget", "none.toml"],
     r"none\.toml: <file>: does not exist"),
    ("budget-dev-zero", lambda w: ["scan", str(_tree(w)), "--budget", "/dev/zero"],
     r"/dev/zero: <file>: cannot be read \(not a regular file\)"),
    ("budget-fifo", lambda w: ["scan", str(_tree(w)), "--budget", _fifo_budget(w)],
     r"budget\.toml: <file>: cannot be read \(not a regular file\)"),
    ("budget-nested-deep", lambda w: ["scan", str(_tree(w)), "--budget",
                                      _budget(w, "x = " + "[" * 5000 + "]" * 5000)],
     r"budget\.toml: <toml>: nested too deeply"),
    ("budget-nan", lambda w: ["scan", str(_tree(w)), "--budget", _budget(w, "x = nan")],
     r"budget\.toml: <toml>: nan is not a finite number"),
    ("output-is-directory", lambda w: ["scan", str(_tree(w)), "--device", "cpu", "--output", "."],
     r"\.: cannot write the report \(exists and is not a regular file\)"),
    ("output-under-a-file", lambda w: ["scan", str(_tree(w)), "--device", "cpu", "--output",
                                       f"{_budget(w, 'x')}/r.txt"],
     r"budget\.toml: cannot write the report"),
    ("max-file-seconds-nan", lambda w: ["scan", str(_tree(w)), "--max-file-seconds", "nan"],
     r"--max-file-seconds: expected a positive number"),
    ("format-unknown", lambda w: ["scan", str(_tree(w)), "--format", "html"],
     r"--format: invalid choice: 'html'"),
]


def _bin(work: Path) -> list[str]:
    (work / "blob.py").write_bytes(b"\x00\x01" * 100)
    return ["scan", "blob.py"]


def _syntax(work: Path) -> list[str]:
    (work / "broken.py").write_text("def (:\n")
    return ["scan", "broken.py"]


@pytest.mark.parametrize(("make", "stderr"), [p[1:] for p in OPTION_PROBES],
                         ids=[p[0] for p in OPTION_PROBES])
def test_hostile_scan_option(sandbox, handled, make, stderr):
    args = make(sandbox.work)
    handled(sandbox.run(args), 2, stderr)

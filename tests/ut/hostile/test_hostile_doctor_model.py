"""Hostile budget files against ``syncgate doctor``, hostile targets against ``syncgate model``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _file(work: Path, data: bytes | str) -> str:
    (work / "b.toml").write_bytes(data.encode() if isinstance(data, str) else data)
    return "b.toml"


def _fifo(work: Path) -> str:
    os.mkfifo(work / "b.toml")
    return "b.toml"


DOCTOR_PROBES = [
    ("budget-missing", lambda w: "none.toml", r"none\.toml: <file>: does not exist"),
    ("budget-directory", lambda w: ".", r"\.: <file>: is a directory"),
    ("budget-fifo", _fifo, r"b\.toml: <file>: cannot be read \(not a regular file\)"),
    ("budget-dev-zero", lambda w: "/dev/zero", r"/dev/zero: <file>: cannot be read"),
    ("budget-nested-deep", lambda w: _file(w, "a = " + "{b = " * 3000 + "1" + "}" * 3000),
     r"b\.toml: <toml>: nested too deeply"),
    ("budget-nan", lambda w: _file(w, "a = nan"), r"<toml>: nan is not a finite number"),
    ("budget-not-utf8", lambda w: _file(w, b"a = '\xfe'"), r"<file>: is not UTF-8 text"),
    ("budget-syntax", lambda w: _file(w, "a = = 1"), r"<toml>: syntax error"),
    ("budget-unknown-key", lambda w: _file(w, 'schema = 1\nmystery = "x"\n'), r"b\.toml: "),
    ("budget-too-large", lambda w: _file(w, "# pad\n" * 3_000_000),
     r"<file>: cannot be read \(larger than 16777216 bytes\)"),
]


@pytest.mark.parametrize(("make", "stderr"), [p[1:] for p in DOCTOR_PROBES],
                         ids=[p[0] for p in DOCTOR_PROBES])
def test_hostile_doctor_budget(sandbox, handled, make, stderr):
    budget = make(sandbox.work)
    handled(sandbox.run(["doctor", "--budget", budget]), 2, stderr)


def _foreign_dir(work: Path) -> list[str]:
    (work / "mine").mkdir()
    (work / "mine" / "notes.txt").write_text("not a model")
    return ["model", "build", "mine"]


def _file_target(work: Path) -> list[str]:
    (work / "target").write_text("a file")
    return ["model", "build", "target"]


MODEL_PROBES = [
    ("build-over-foreign-dir", _foreign_dir, r"mine"),
    ("build-onto-a-file", _file_target, r"target"),
    ("build-under-a-file", lambda w: [*_file_target(w)[:2], "target/sub"], r"target"),
    ("arch-unknown", lambda w: ["model", "build", "x", "--arch", "gpt9"],
     r"--arch: invalid choice: 'gpt9'"),
    ("action-missing", lambda w: ["model"], r"required"),
    ("path-arch-unknown", lambda w: ["model", "path", "--arch", "bogus"],
     r"--arch: invalid choice: 'bogus'"),
]


@pytest.mark.parametrize(("make", "stderr"), [p[1:] for p in MODEL_PROBES],
                         ids=[p[0] for p in MODEL_PROBES])
def test_hostile_model_target(sandbox, handled, make, stderr):
    args = make(sandbox.work)
    made = {str(p) for p in sandbox.work.rglob("*")}
    outcome = sandbox.run(args, timeout=120)
    handled(outcome, 2, stderr)
    assert {str(p) for p in sandbox.work.rglob("*")} == made

"""Hostile logs and options against ``syncgate repro``."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

FAILED = "FAILED tests/test_a.py::test_x - assert 0\n== 1 failed in 0.10s ==\n"


def _write(path: Path, data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path.name


def _fifo(work: Path) -> str:
    os.mkfifo(work / "ci.log")
    return "ci.log"


def _zip(work: Path, members: dict[str, bytes]) -> str:
    with zipfile.ZipFile(work / "run.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return "run.zip"


def _inflating_zip(work: Path) -> str:
    """A 32 MiB member (no newline) that compresses to ~32 KiB."""
    with zipfile.ZipFile(work / "run.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, \
            archive.open("1_job.txt", "w") as member:
        member.write(b"tests/t.py::test_a PASSED\n")
        for _ in range(32):
            member.write(b"y" * (1 << 20))
    return "run.zip"


def _long_line(work: Path) -> str:
    with (work / "ci.log").open("wb") as out:
        out.write(b"tests/t.py::test_a PASSED\n")
        for _ in range(24):
            out.write(b"z" * (1 << 20))
        out.write(b"\nFAILED tests/t.py::test_b - boom\n")
    return "ci.log"


def _deep_reportlog(work: Path) -> str:
    start = '{"$report_type": "SessionStart", "pytest_version": "8"}\n'
    return _write(work / "report.jsonl", start + "[" * 100_000 + "]" * 100_000 + "\n")


def _deep_junit(work: Path) -> str:
    return _write(work / "junit.xml", "<testsuite>" + "<a>" * 50_000 + "</a>" * 50_000
                  + "</testsuite>")


def _entity_bomb(work: Path) -> str:
    lol = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    return _write(work / "junit.xml", f'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY l0 "lol">{lol}]>'
                  '<testsuite><testcase name="&l9;"/></testsuite>')


def _dir(work: Path) -> str:
    (work / "logdir").mkdir()
    return "logdir"


# (id, make the log in the work dir -> its name, extra args, exit code, stderr pattern)
LOG_PROBES = [
    ("missing", lambda w: "nope.log", [], 2, r"nope\.log: cannot read"),
    ("directory", _dir, [], 2, r"logdir: is a directory"),
    ("fifo", _fifo, [], 2, r"ci\.log: cannot read \(not a regular file\)"),
    ("dev-zero", lambda w: "/dev/zero", [], 2, r"/dev/zero: cannot read \(not a regular file\)"),
    ("empty", lambda w: _write(w / "ci.log", b""), [], 2, r"empty file"),
    ("whitespace-only", lambda w: _write(w / "ci.log", " \n\t\n" * 100), [], 2,
     r"no pytest output found"),
    ("os-release", lambda w: _write(w / "ci.log", 'NAME="Debian GNU/Linux"\nID=debian\n'), [], 2,
     r"not a CI test log"),
    ("binary", lambda w: _write(w / "ci.log", bytes(range(256)) * 64), [], 2, r"binary file"),
    ("not-utf8", lambda w: _write(w / "ci.log", b"\xff\xfe\xfa" * 5000), [], 2, r"not UTF-8"),
    ("damaged-zip", lambda w: _write(w / "run.zip", b"PK\x03\x04" + b"\x00" * 64), [], 2,
     r"damaged zip"),
    ("zip-without-job-logs", lambda w: _zip(w, {"readme.md": b"hi"}), [], 2,
     r"holds no per-job \.txt log"),
    ("zip-inflating-past-cap", _inflating_zip, ["--max-log-bytes", "8M"], 2,
     r"more than 8388608 bytes of log \(after decompression\)"),
    ("line-without-end", _long_line, ["--max-line-length", "64K"], 0, None),
    ("reportlog-nested-deep", _deep_reportlog, [], 0, r"no failed or errored tests"),
    ("junit-malformed", lambda w: _write(w / "junit.xml", "<testsuite><testcase"), [], 2,
     r"not well-formed JUnit"),
    ("junit-wrong-root", lambda w: _write(w / "junit.xml", "<html><body/></html>"), [], 2,
     r"XML root <html> is not JUnit"),
    ("junit-nested-deep", _deep_junit, [], 0, r"no failed or errored tests"),
    ("junit-entity-expansion", _entity_bomb, [], 2, r"junit\.xml"),
    ("env-header-nested-deep", lambda w: _write(
        w / "ci.log", "syncgate-env: " + "[" * 100_000 + "]" * 100_000 + "\n" + FAILED), [], 0, None),
    ("log-path-with-escapes", lambda w: "a\x1b[31m\nb\x07.log", [], 2, r"a\\x1b\[31m\\nb\\x07\.log"),
]


@pytest.mark.parametrize(("make", "extra", "code", "stderr"),
                         [p[1:] for p in LOG_PROBES], ids=[p[0] for p in LOG_PROBES])
def test_hostile_log_with_list(sandbox, handled, make, extra, code, stderr):
    log = make(sandbox.work)
    made = set(os.listdir(sandbox.work))
    outcome = sandbox.run(["repro", "--list", log, *extra])
    handled(outcome, code, stderr)
    assert set(os.listdir(sandbox.work)) == made


def test_control_bytes_in_node_ids_are_escaped_on_stdout(sandbox, handled):
    _write(sandbox.work / "ci.log", "FAILED tests/test_a.py::test_\x1b]0;owned\x07x - boom\n"
                                    "== 1 failed in 0.1s ==\n")
    outcome = sandbox.run(["repro", "--list", "ci.log"])
    handled(outcome, 0)
    assert "\x1b" not in outcome.stdout
    assert "\x07" not in outcome.stdout
    assert outcome.stdout.strip() == "tests/test_a.py::test_\\x1b]0;owned\\x07x"


OPTION_PROBES = [
    ("timeout-nan", ["--timeout", "nan"], r"--timeout: expected a positive number of seconds"),
    ("timeout-negative", ["--timeout", "-1"], r"--timeout: expected a positive number"),
    ("timeout-inf", ["--timeout", "inf"], r"--timeout: expected a positive number"),
    ("runs-zero", ["--runs", "0"], r"--runs must be at least 1"),
    ("target-rate-nan", ["--target-rate", "nan"], r"must lie strictly between 0 and 1"),
    ("confidence-above-one", ["--confidence", "1.5"], r"must lie strictly between 0 and 1"),
    ("workers-zero", ["--workers", "0"], r"--workers must be at least 1"),
    ("workers-word", ["--workers", "many"], r"expected a number or 'auto'"),
    ("max-log-bytes-zero", ["--max-log-bytes", "0"], r"expected a positive size"),
    ("max-line-garbage", ["--max-line-length", "1Q"], r"expected a positive size"),
    ("rootdir-missing", ["--rootdir", "nowhere"], r"--rootdir nowhere: not a directory"),
    ("unknown-option", ["--frobnicate"], r"unrecognized arguments: --frobnicate"),
]


@pytest.mark.parametrize(("extra", "stderr"), [p[1:] for p in OPTION_PROBES],
                         ids=[p[0] for p in OPTION_PROBES])
def test_hostile_option(sandbox, handled, extra, stderr):
    _write(sandbox.work / "ci.log", FAILED)
    handled(sandbox.run(["repro", "ci.log", *extra]), 2, stderr)


@pytest.fixture
def suite(sandbox):
    """A project tree with a failing test, a helper module that must never be imported, and a
    log that names both plus a conftest and a path outside the tree."""
    root = sandbox.work / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tools").mkdir()
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (root / "tests" / "test_a.py").write_text("def test_x():\n    assert 0\n")
    (root / "tests" / "conftest.py").write_text("")
    (root / "tools" / "deploy.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('RAN').write_text('x')\n"
        "def test_x():\n    pass\n")
    _write(sandbox.work / "ci.log",
           "FAILED tools/deploy.py::test_x - boom\nFAILED tests/conftest.py::test_c - boom\n"
           "FAILED ../../etc/passwd::test_p - boom\nFAILED -p/evil.py::test_e - boom\n" + FAILED)
    return root


def test_a_log_cannot_choose_what_gets_imported(sandbox, handled, suite):
    outcome = sandbox.run(["repro", "ci.log", "--rootdir", "proj", "--runs", "2", "-n", "1"])
    handled(outcome, 1)  # tests/test_a.py::test_x is broken: exit 1
    assert not (suite / "tools" / "RAN").exists()
    lines = outcome.stdout.splitlines()
    assert any("missing" in line and "tools/deploy.py::test_x" in line for line in lines)
    assert any("broken" in line and "tests/test_a.py::test_x" in line for line in lines)


def test_report_dir_that_is_a_file(sandbox, handled, suite):
    _write(sandbox.work / "out", "not a dir")
    outcome = sandbox.run(["repro", "ci.log", "--rootdir", "proj", "--runs", "1", "-n", "1",
                           "--report-dir", "out/r"])
    handled(outcome, 2, r"out/r: cannot write reports")


def test_report_files_are_all_or_nothing(sandbox, handled, suite):
    (sandbox.work / "out" / "junit.xml").mkdir(parents=True)  # one of the three cannot be written
    outcome = sandbox.run(["repro", "ci.log", "--rootdir", "proj", "--runs", "1", "-n", "1",
                           "--report-dir", "out"])
    handled(outcome, 2, r"junit\.xml: cannot write reports \(exists and is not a regular file\)")
    assert os.listdir(sandbox.work / "out") == ["junit.xml"]


def test_env_header_escapes_do_not_reach_the_markdown_report(sandbox, handled, suite):
    _write(sandbox.work / "ci.log", 'syncgate-env: {"python": "3.11\\u001b]0;x\\u0007"}\n' + FAILED)
    outcome = sandbox.run(["repro", "ci.log", "--rootdir", "proj", "--runs", "1", "-n", "1",
                           "--report-dir", "out"], )
    handled(outcome, 1, files=["work/out", "work/out/report.md", "work/out/report.json",
                               "work/out/junit.xml"])
    for name in ("report.md", "junit.xml"):
        text = (sandbox.work / "out" / name).read_text()
        assert "\x1b" not in text, name
        assert "\x07" not in text, name
    assert "\x1b" not in outcome.stdout

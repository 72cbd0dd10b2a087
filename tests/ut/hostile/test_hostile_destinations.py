"""Destinations and annotate's inputs that are not regular files, and hostile reports (issue 24,
items 6 and 8 and the smaller ones).

A FIFO as the job summary or among the files ``syncgate annotate`` reads would block the step
forever; every probe runs with a short timeout, so a regression fails as ``<hung>`` (exit -999)
instead of hanging the suite. The FIFOs live in the probe's own work dir.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = "class GPUModelRunner:\n    def execute_model(self):\n        torch.cuda.synchronize()\n"
HANG_S = 20


def _tree(work: Path) -> None:
    (work / "src").mkdir()
    (work / "src" / "runner.py").write_text(RUNNER)


def _vllm_tree(work: Path) -> None:
    worker = work / "vllm" / "v1" / "worker"
    worker.mkdir(parents=True)
    (worker / "gpu_model_runner.py").write_text(RUNNER)


@contextlib.contextmanager
def _reader(fifo: Path):
    """A FIFO with a reader attached: opening it for writing no longer blocks or fails."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        yield
    finally:
        os.close(fd)


def _refused(outcome, handled, files=()) -> None:
    handled(outcome, 2, r"not a regular file", files=files)


# --- the job summary: scan and check ------------------------------------------------------------

def test_scan_summary_fifo_is_refused_not_waited_on(sandbox, handled):
    _tree(sandbox.work)
    os.mkfifo(sandbox.work / "summary.md")
    outcome = sandbox.run(["scan", "src", "--device", "cuda", "--github-summary", "summary.md"],
                          timeout=HANG_S)
    _refused(outcome, handled)


def test_scan_step_summary_env_fifo_is_refused(sandbox, handled):
    _tree(sandbox.work)
    os.mkfifo(sandbox.work / "summary.md")
    outcome = sandbox.run(["scan", "src", "--device", "cuda"], timeout=HANG_S,
                          env={"GITHUB_STEP_SUMMARY": str(sandbox.work / "summary.md")})
    _refused(outcome, handled)


def test_scan_summary_fifo_with_a_reader_is_still_refused(sandbox, handled):
    _tree(sandbox.work)
    fifo = sandbox.work / "summary.md"
    os.mkfifo(fifo)
    with _reader(fifo):
        outcome = sandbox.run(["scan", "src", "--device", "cuda", "--github-summary", str(fifo)],
                              timeout=HANG_S)
    _refused(outcome, handled)


def test_scan_summary_device_is_refused(sandbox, handled):
    _tree(sandbox.work)
    outcome = sandbox.run(["scan", "src", "--device", "cuda", "--github-summary", "/dev/null"],
                          timeout=HANG_S)
    _refused(outcome, handled)


def _check(sandbox, *extra, env=None):
    _vllm_tree(sandbox.work)
    return sandbox.run(["check", "--levels", "scan", "--source", ".", "--report-dir", "rep",
                        *extra], timeout=60, env=env)


def _check_refused(outcome) -> None:
    text = outcome.stdout + outcome.stderr
    assert "<hung>" not in text, text[-2000:]
    assert "Traceback" not in text, text[-2000:]
    assert outcome.code == 2, text[-2000:]
    assert "cannot write the job summary (not a regular file)" in outcome.stderr.splitlines()[-1]
    assert outcome.survivors == []


def test_check_summary_fifo_is_refused_not_waited_on(sandbox):
    os.mkfifo(sandbox.work / "summary.md")
    _check_refused(_check(sandbox, "--github-summary", "summary.md"))


def test_check_step_summary_env_fifo_is_refused(sandbox):
    os.mkfifo(sandbox.work / "summary.md")
    _check_refused(_check(sandbox, env={"GITHUB_STEP_SUMMARY": str(sandbox.work / "summary.md")}))


# --- what annotate reads --------------------------------------------------------------------------

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuite name="syncgate.scan" tests="1">
  <testcase classname="{classname}" name="t" file="vllm/v1/worker/r.py" line="{line}">
    <failure message="{message}">detail</failure>
  </testcase>
</testsuite>
"""


def _reports(work: Path, classname: str = "c", line: str = "3", message: str = "m") -> Path:
    reports = work / "reports"
    reports.mkdir()
    (reports / "junit.xml").write_text(JUNIT.format(classname=classname, line=line,
                                                     message=message))
    return reports


@pytest.mark.parametrize("where", ["fifo.xml", "sub/deeper.xml", "report.json"])
def test_annotate_fifo_input_is_refused_not_waited_on(sandbox, handled, where):
    reports = _reports(sandbox.work)
    (reports / where).parent.mkdir(exist_ok=True)
    os.mkfifo(reports / where)
    outcome = sandbox.run(["annotate", "reports"], timeout=HANG_S)
    handled(outcome, 2, r"not a regular file")


BAD_REPORTS = [
    ("deep", "[" * 100_000 + "]" * 100_000, r"report\.json: not a readable report"),
    ("levels-not-objects", json.dumps({"levels": {"scan": 5}}), r"not a syncgate check report"),
    ("levels-a-list", json.dumps({"levels": [1, 2]}), r"not a syncgate check report"),
    ("truncated", '{"levels": {"scan": {"status": "fail"', r"report\.json: not a readable report"),
]


@pytest.mark.parametrize(("text", "stderr"), [b[1:] for b in BAD_REPORTS],
                         ids=[b[0] for b in BAD_REPORTS])
def test_annotate_bad_report_json_is_one_line_exit_2(sandbox, handled, text, stderr):
    reports = _reports(sandbox.work)
    (reports / "report.json").write_text(text)
    handled(sandbox.run(["annotate", "reports"], timeout=HANG_S), 2, stderr)


def test_annotate_report_json_not_utf8_is_one_line_exit_2(sandbox, handled):
    reports = _reports(sandbox.work)
    (reports / "report.json").write_bytes(b'{"levels": {"scan": {"status": "\xff"}}}')
    handled(sandbox.run(["annotate", "reports"], timeout=HANG_S), 2,
            r"report\.json: not a readable report")


def test_annotate_prints_the_verdict_per_level_like_the_workflow_did(sandbox, handled):
    """One entry point: the subcommand prints the level lines the container module printed."""
    reports = _reports(sandbox.work)
    (reports / "report.json").write_text(json.dumps({
        "passed": False, "levels": {"scan": {"status": "fail", "duration_s": 0.5}}}))
    outcome = sandbox.run(["annotate", "reports"], timeout=HANG_S)
    handled(outcome, 0)
    assert outcome.stdout.splitlines()[:2] == [
        "::error title=syncgate check%3A scan fail::FAIL in 0.5 s",
        "::error title=syncgate check verdict::FAIL (scan fail)"]


@pytest.mark.parametrize("value", ["-2", "\u0663", "1e3"])
def test_annotate_max_must_be_a_whole_number(sandbox, handled, value):
    _reports(sandbox.work)
    handled(sandbox.run(["annotate", "reports", "--max", value], timeout=HANG_S), 2,
            r"argument --max: expected a whole number >= 0")


@pytest.mark.parametrize("line", ["\u00b2", "\u0663"])
def test_annotate_unicode_digit_line_is_dropped_not_a_crash(sandbox, handled, line):
    _reports(sandbox.work, line=line)
    outcome = sandbox.run(["annotate", "reports"], timeout=HANG_S)
    handled(outcome, 0)
    assert outcome.stdout.startswith("::error file=vllm/v1/worker/r.py,title="), outcome.stdout


ESCAPES = [
    ("report-reason-osc", "reason", "\x1b]0;owned\x07\x1b[2J"),
    ("classname-c1", "classname", "c&#155;2J"),
    ("message-newline-stop-commands", "message", "x&#10;::stop-commands::T&#13;"),
]


@pytest.mark.parametrize(("field", "value"), [e[1:] for e in ESCAPES], ids=[e[0] for e in ESCAPES])
def test_annotate_escapes_control_characters_from_the_reports(sandbox, handled, field, value):
    if field == "reason":  # JSON carries ESC; XML 1.0 cannot
        reports = _reports(sandbox.work)
        (reports / "report.json").write_text(json.dumps({"passed": False, "levels": {
            "scan": {"status": "fail", "reason": value}}}))
    else:
        _reports(sandbox.work, **{field: value})
    outcome = sandbox.run(["annotate", "reports"], timeout=HANG_S)
    handled(outcome, 0)
    for control in ("\x1b", "\x9b", "\x07", "\r"):
        assert control not in outcome.stdout, outcome.stdout
    assert [line for line in outcome.stdout.splitlines() if line.startswith("::stop")] == []
    assert "\\x" in outcome.stdout or "%0A" in outcome.stdout, outcome.stdout


def test_annotate_runs_without_the_gates_dependencies(tmp_path):
    """The container workflow runs it with the host's bare python3 and PYTHONPATH=src: only the
    standard library may be needed (no psutil, torch)."""
    (tmp_path / "junit.xml").write_text(JUNIT.format(classname="c", line="3", message="m"))
    import vllm_syncgate

    src = str(Path(vllm_syncgate.__file__).parent.parent)
    done = subprocess.run([sys.executable, "-S", "-m", "vllm_syncgate", "annotate", str(tmp_path)],
                          env={"PYTHONPATH": src, "PATH": os.environ.get("PATH", "")},
                          capture_output=True, text=True, timeout=HANG_S, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("::error file=vllm/v1/worker/r.py,line=3,"), done.stdout


# --- device ids, file modes ----------------------------------------------------------------------

@pytest.mark.parametrize(("device", "ids"), [("cuda", "\u0663"), ("npu", "\u00b2"),
                                              ("npu", "0,\uff11")])
def test_devices_unicode_digits_are_no_device_ids(sandbox, handled, device, ids):
    handled(sandbox.run(["devices", "run-args", device, "--ids", ids], timeout=HANG_S), 2,
            r"expected comma-separated integers")


@pytest.mark.parametrize("flag", ["--write-baseline", "--output"])
def test_a_private_file_rewritten_stays_private(sandbox, flag):
    _tree(sandbox.work)
    target = sandbox.work / "private.json"
    target.write_text("{}")
    target.chmod(0o600)
    extra = ["--format", "json"] if flag == "--output" else []
    outcome = sandbox.run(["scan", "src", "--device", "cuda", flag, "private.json", *extra],
                          timeout=60)
    assert "Traceback" not in outcome.stderr
    assert outcome.code in (0, 1), outcome.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text() != "{}"

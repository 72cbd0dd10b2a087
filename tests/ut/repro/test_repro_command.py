import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from vllm_syncgate.cli import main
from vllm_syncgate.commands import repro as repro_command
from vllm_syncgate.errors import RerunError
from vllm_syncgate.repro.runner import LocalRunner


def test_list_prints_node_ids_and_runs_nothing(repro_logs, monkeypatch, capsys):
    def no_rerun(*_args, **_kw):
        raise AssertionError("--list must not run anything")

    monkeypatch.setattr(repro_command, "reproduce", no_rerun)
    monkeypatch.setattr(LocalRunner, "pytest", no_rerun)
    assert main(["repro", str(repro_logs / "gh_run_view_log_failed.txt"), "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "case_order.py::test_victim"
    assert sorted(lines) == sorted([
        "case_broken.py::TestAlways::test_broken", "case_collect_error.py",
        "case_flaky.py::test_ci_only", "case_flaky.py::test_flaky_half",
        "case_flaky.py::test_flaky_third", "case_flaky.py::test_labels[[nested]]",
        "case_flaky.py::test_labels[\\xfc]", "case_flaky.py::test_labels[x - y]",
        "case_order.py::test_victim"])


def test_list_works_as_a_subprocess_for_outside_checks(repro_logs):
    out = subprocess.run([sys.executable, "-m", "vllm_syncgate.cli", "repro",
                          str(repro_logs / "pytest_reportlog.jsonl"), "--list"],
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["case_collect_error.py", "case_flaky.py::test_labels[\\xfc]",
                                "case_order.py::test_victim",
                                "case_broken.py::TestAlways::test_broken"]


def test_log_without_failures_exits_zero_and_says_so(tmp_path, capsys):
    log = tmp_path / "green.txt"
    log.write_text("t.py::test_a PASSED [100%]\n==== 1 passed in 0.10s ====\n")
    assert main(["repro", str(log), "--rootdir", str(tmp_path)]) == 0
    assert "no failed or errored tests in the log" in capsys.readouterr().out
    assert main(["repro", str(log), "--list"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no failed or errored tests" in captured.err


@pytest.mark.parametrize(
    ("content", "argv", "problem"),
    [(b"", [], "empty file"), (b"\x00\x01\x02\x03", [], "binary file"),
     (b"FAILED a.py::t\n", ["--runs", "0"], "--runs must be at least 1"),
     (b"FAILED a.py::t\n", ["--rootdir", "/nonexistent/dir"], "not a directory")],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, content, argv, problem):
    log = tmp_path / "ci.log"
    log.write_bytes(content)
    assert main(["repro", str(log), *argv]) == 2
    err = capsys.readouterr().err
    assert problem in err
    assert err.count("\n") == 1


@pytest.mark.slow
def test_command_end_to_end_reports_and_exit_code(repro_logs, suite_dir, tmp_path, capsys):
    # Two tests, two verdicts: broken makes the exit code 1; the reports keep every rerun.
    log = tmp_path / "ci.txt"
    text = (repro_logs / "pytest_quiet.txt").read_text()
    log.write_text("\n".join(line for line in text.splitlines()
                             if not line.startswith(("FAILED", "ERROR", "_"))
                             or "test_broken" in line or "test_flaky_half" in line) + "\n")
    reports = tmp_path / "out"
    code = main(["repro", str(log), "--rootdir", str(suite_dir), "--runs", "6", "-n", "1",
                 "--no-early-stop", "--report-dir", str(reports)])
    out = capsys.readouterr().out
    assert code == 1
    assert "broken" in out
    assert "flaky" in out
    data = json.loads((reports / "report.json").read_text())
    assert {t["nodeid"]: t["verdict"] for t in data["tests"]} == {
        "case_broken.py::TestAlways::test_broken": "broken",
        "case_flaky.py::test_flaky_half": "flaky"}
    assert data["exit_code"] == 1
    suite = ET.parse(reports / "junit.xml").getroot()
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert len(cases["test_broken"].findall("failure")) == 1
    assert len(cases["test_broken"].findall("rerunFailure")) == 5
    flaky_failures = cases["test_flaky_half"].findall("flakyFailure")
    assert len(flaky_failures) == next(t["failures"] for t in data["tests"]
                                       if t["verdict"] == "flaky")
    assert cases["test_flaky_half"].find("failure") is None
    assert "| **broken** |" in (reports / "report.md").read_text()


def test_killed_rerun_takes_its_process_tree_along(suite_dir, tmp_path, monkeypatch):
    pidfile = tmp_path / "child.pid"
    monkeypatch.setenv("SUITE_CHILD_PIDFILE", str(pidfile))
    monkeypatch.setenv("SUITE_SLEEP", "60")
    runner = LocalRunner(suite_dir, timeout=10)
    with pytest.raises(RerunError, match="ran past 10s and was killed"):
        runner.pytest(["-p", "no:randomly", "-p", "no:xdist", "case_slow.py::test_sleeps"])
    if not pidfile.exists():
        pytest.skip("this machine did not get pytest to the test within 10 s")
    child = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"grandchild {child} survived the teardown")

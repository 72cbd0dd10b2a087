import json
import xml.etree.ElementTree as ET

import pytest

from vllm_syncgate.errors import ReportDirError
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome
from vllm_syncgate.repro.report import (
    ReproReport,
    to_json,
    to_junit,
    to_markdown,
    to_terminal,
    write_reports,
)
from vllm_syncgate.repro.reproduce import (
    ReproVerdict,
    RerunConfig,
    RunResult,
    TestVerdict,
    _session_args,
)


def runs(pattern, replay=False):
    """'FPF' -> failed, passed, failed runs 1..3."""
    return [RunResult(i, "failed" if c == "F" else "passed", "call" if c == "F" else "",
                      "gw0", 0.1, f"E   boom in run {i}" if c == "F" else "", replay)
            for i, c in enumerate(pattern, 1)]


def verdict(nodeid, kind, pattern="", replays="", **kw):
    failure = CiFailure(nodeid, CiOutcome.FAILED)
    return TestVerdict(nodeid, kind, failure, runs=runs(pattern),
                       replays=runs(replays, replay=True), **kw)


@pytest.fixture
def report():
    log = CiLog(source="ci.log", format="github", seed=4242, env={"torch": "2.12.0"})
    return ReproReport(log, [
        verdict("t.py::test_flaky", ReproVerdict.FLAKY, "FPPF", interval=(0.15, 0.85)),
        verdict("t.py::test_broken", ReproVerdict.BROKEN, "FFF", interval=(0.3, 1.0)),
        verdict("t.py::test_order", ReproVerdict.ORDER_DEPENDENT, "PPP", "F",
                predecessors=("t.py::test_a",), upper_bound=0.63),
        verdict("t.py::test_gone", ReproVerdict.MISSING,
                detail="no such test in the collected tree"),
        verdict("t.py", ReproVerdict.ENVIRONMENT, detail="t.py does not collect here: ImportError"),
        verdict("t.py::test_ok", ReproVerdict.NOT_REPRODUCED, "PPP", upper_bound=0.63),
    ], "local /src", 3, 0.95, {"torch": ("2.12.0", "2.13.0+cpu")})


def test_junit_keeps_every_rerun_and_maps_verdicts(report):
    suite = ET.fromstring(to_junit(report))
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("6", "2", "1", "1")
    cases = {c.get("name") or c.get("classname"): c for c in suite.iter("testcase")}
    flaky = cases["test_flaky"]
    assert flaky.find("failure") is None
    assert [f.get("message") for f in flaky.findall("flakyFailure")] == [
        "run 1: boom in run 1", "run 4: boom in run 4"]  # each failure's own message
    assert flaky.find("flakyFailure/stackTrace").text == "E   boom in run 1"
    broken = cases["test_broken"]
    assert broken.find("failure").get("type") == "broken"
    assert len(broken.findall("rerunFailure")) == 2
    order = cases["test_order"]
    assert order.find("failure").text == "E   boom in run 1"
    assert cases["test_gone"].find("skipped") is not None
    assert cases["t.py"].find("error").get("type") == "environment"
    assert not list(cases["test_ok"])[:-1]  # only system-out


def test_json_terminal_and_markdown_say_the_same(report):
    data = to_json(report)
    assert data["exit_code"] == 1
    assert [t["verdict"] for t in data["tests"]] == [
        "broken", "order-dependent", "flaky", "environment", "missing", "not-reproduced"]
    assert data["env_differences"] == {"torch": {"ci": "2.12.0", "here": "2.13.0+cpu"}}
    flaky = next(t for t in data["tests"] if t["verdict"] == "flaky")
    assert (flaky["failures"], flaky["runs"], flaky["summary"]) == (
        2, 4, "failed 2/4 runs, rate 50% (95% interval 15%–85%)")
    text = to_terminal(report)
    assert "environment differs: torch: CI '2.12.0', here '2.13.0+cpu'" in text
    assert "CI pytest-randomly seed: 4242" in text
    assert "0/3 alone; failed 1/1 after its 1 CI predecessor(s)" in text
    md = to_markdown(report)
    assert "| **broken** | `t.py::test_broken` | failed 3/3 runs (rate 30%–100% at 95%) |" in md
    assert "## `t.py::test_order` — first failure" in md


def test_nothing_broken_exits_zero(report):
    report.verdicts = [v for v in report.verdicts if v.verdict is not ReproVerdict.BROKEN]
    assert report.exit_code == 0
    report.verdicts = []
    assert "nothing to rerun" in to_markdown(report)


def test_reports_are_written_or_fail_with_a_typed_error(report, tmp_path):
    written = write_reports(report, tmp_path / "out")
    assert [p.name for p in written] == ["report.md", "report.json", "junit.xml"]
    assert json.loads(written[1].read_text())["runs"] == 3
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ReportDirError, match="cannot write reports"):
        write_reports(report, blocker / "out")


class Has:
    description = "fake"
    concurrent = True

    def __init__(self, *modules):
        self.modules = set(modules)

    def has_module(self, name):
        return name in self.modules


def test_session_args_pass_the_ci_seed_only_where_randomly_is_installed():
    config = RerunConfig(seed=4242)
    assert "--randomly-seed=4242" in _session_args(Has("xdist", "pytest_randomly"), 2, 10, config)
    args = _session_args(Has("xdist"), 2, 10, config)
    assert "--randomly-seed=4242" not in args
    assert args[-2:] == ["-p", "no:randomly"]
    assert "-n" in args
    assert _session_args(Has("xdist"), 2, 1, config)[-4:-2] == ["-n", "0"]
    assert "-n" not in _session_args(Has(), 2, 10, config)

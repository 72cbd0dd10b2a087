"""The check's junit.xml: a budget failure points at the offending call site in the user's tree,
counts agree with the cases, and the document is valid against the JUnit schema CI dashboards read."""

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vllm_syncgate.audit.events import CallSite, StepKind, SyncEvent, SyncKind
from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.levels import PASS, LevelCase, LevelResult
from vllm_syncgate.check.levels_report import write_level_reports
from vllm_syncgate.check.report import CheckResult, fix_hints, junit
from vllm_syncgate.parity import Tolerance

XSD = Path(__file__).resolve().parents[2] / "data" / "junit" / "junit.xsd"


def _site(file):
    return CallSite(str(file), 1234, "_update_states", "vllm.v1.worker.gpu_model_runner",
                    "GPUModelRunner._update_states")


def _result(kit, site):
    steps = [kit["clean_steps"](1)[0]]
    for index in (1, 2):
        steps.append(kit["clean_steps"](1)[0])
        steps[-1].index, steps[-1].kind = index, StepKind.DECODE
        steps[-1].events = [*steps[-1].events, SyncEvent(SyncKind.BLOCKING_READBACK, "Tensor.item",
                                                          site, index, StepKind.DECODE)]
    bad = kit["scenario_run"]("baseline", "sequential", [], steps)
    good = kit["scenario_run"]("baseline", "batched", [], kit["clean_steps"](3))
    scenarios, groups = judge([kit["group_run"]("baseline", [bad, good])], kit["NoReference"](),
                              kit["budgets"], mode="exact", tolerance=Tolerance(),
                              default_runner="v1")
    return CheckResult({"device": "cpu"}, {}, {}, scenarios, groups)


@pytest.fixture
def schema():
    xmlschema = pytest.importorskip("xmlschema")
    return xmlschema.XMLSchema(str(XSD))


@pytest.mark.parametrize("where", ["tree", "site-packages"])
def test_failing_case_points_at_the_call_site_in_the_users_tree(judge_kit, tmp_path, monkeypatch, where):
    if where == "tree":  # a vLLM checkout, syncgate run from its root
        monkeypatch.chdir(tmp_path)
        file = tmp_path / "vllm" / "v1" / "worker" / "gpu_model_runner.py"
        expected = "vllm/v1/worker/gpu_model_runner.py"
    else:  # the installed vLLM
        file = Path("/opt/venv/lib/python3.11/site-packages/vllm/v1/worker/gpu_model_runner.py")
        expected = "vllm/v1/worker/gpu_model_runner.py"
    result = _result(judge_kit, _site(file))
    suite = ET.fromstring(junit(result))
    failing = suite.find("testcase[failure]")
    assert failing.get("name") == "sequential"
    assert (failing.get("file"), failing.get("line")) == (expected, "1234")
    text = failing.find("failure").text
    assert "fix: do not read device values on the host in the step" in text
    assert 'site = "vllm.v1.worker.gpu_model_runner:GPUModelRunner._update_states"' in text
    passing = suite.find("testcase[@name='batched']")
    assert passing.find("failure") is None
    assert "vllm_syncgate/serve/scenarios.py" in passing.get("file")


def test_fix_hints_name_site_pattern_and_allow_stanza(judge_kit):
    hints = fix_hints(_result(judge_kit, _site("/t/gpu_model_runner.py")))
    assert hints[0] == "/t/gpu_model_runner.py:1234:_update_states (blocking_readback)"
    assert hints[1].startswith("fix: do not read device values on the host in the step")
    assert hints[2] == "  in the step, instead of the sync: host_buf.copy_(value, non_blocking=True); event.record()"
    assert hints[-7:] == ['      extends = "cuda"', "      [[budget]]", "      speculation = false",
                          "      [[budget.allow]]",
                          '      site = "vllm.v1.worker.gpu_model_runner:GPUModelRunner._update_states"',
                          '      kind = "blocking_readback"',
                          '      reason = "<why this sync is by design>"']


def test_whole_report_is_valid_junit_and_counts_agree(judge_kit, tmp_path, schema):
    result = _result(judge_kit, _site("/t/gpu_model_runner.py"))
    levels = [LevelResult("scan", PASS, duration_s=1.0, cases=[LevelCase("R.execute_model", True, "ok")]),
              LevelResult("serve", PASS if result.passed else "fail", duration_s=2.0)]
    paths = write_level_reports(tmp_path, levels, result, {"syncgate": "0"})
    schema.validate(str(paths["junit"]))
    root = ET.parse(paths["junit"]).getroot()
    cases = root.findall(".//testcase")
    assert int(root.get("tests")) == len(cases) == 3
    assert int(root.get("failures")) == len(root.findall(".//testcase/failure")) == 1
    for suite in root:
        assert int(suite.get("tests")) == len(suite.findall("testcase"))


def test_schema_rejects_what_dashboards_cannot_read(schema, tmp_path):
    """The validator is not a formality: a case without a name and a count that is not a number fail."""
    bad = tmp_path / "bad.xml"
    bad.write_text('<testsuites><testsuite name="s" tests="x"><testcase classname="c"/></testsuite></testsuites>')
    assert not schema.is_valid(str(bad))
    good = tmp_path / "good.xml"
    good.write_text('<testsuites><testsuite name="s" tests="1"><testcase name="n" file="a.py" line="3">'
                    '<failure message="m">t</failure></testcase></testsuite></testsuites>')
    assert schema.is_valid(str(good))

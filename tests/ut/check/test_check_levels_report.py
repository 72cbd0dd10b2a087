"""One report for all levels: a terminal section, a ``levels`` object and a JUnit suite each."""

import json
import xml.etree.ElementTree as ET

from vllm_syncgate.check.levels import FAIL, PASS, LevelCase, LevelResult, skipped
from vllm_syncgate.check.levels_report import sections, summary, write_level_reports

LEVELS = [
    LevelResult("scan", PASS, duration_s=1.25, cases=[LevelCase("R.execute_model", True, "ok")],
                notes=["vllm at /t: 1 entry points"]),
    LevelResult("unit", FAIL, duration_s=3.5, cases=[
        LevelCase("probes.to_list", False, "blocking_readback: .tolist()", "/t/r.py", 12, 0.5),
        LevelCase("probes.async_output", True, "ok", time_s=0.25)]),
    skipped("serve", "skipped: the npu serving stack is not installed here (missing vllm-ascend)"),
]


def test_sections_and_summary_name_each_level():
    text = sections(LEVELS, None)
    assert "== scan: PASS (1.2 s)" in text
    assert "== unit: FAIL (3.5 s)" in text
    assert "[/t/r.py:12]" in text
    assert "== serve: SKIPPED (skipped: the npu serving stack" in text
    assert summary(LEVELS) == "scan PASS 1.2s, unit FAIL 3.5s, serve SKIPPED"


def test_reports_have_levels_and_one_suite_per_level(tmp_path):
    (tmp_path / "syncs_per_step.png").write_bytes(b"an earlier run's plot")
    paths = write_level_reports(tmp_path, LEVELS, None, {"syncgate": "0"})
    assert set(paths) == {"json", "junit"}
    assert not (tmp_path / "syncs_per_step.png").exists()  # it would pass for this run's
    doc = json.loads(paths["json"].read_text())
    assert doc["passed"] is False
    assert {k: v["status"] for k, v in doc["levels"].items()} == {
        "scan": "pass", "unit": "fail", "serve": "skipped"}
    root = ET.parse(paths["junit"]).getroot()
    assert root.tag == "testsuites"
    assert [s.get("name") for s in root] == ["syncgate.scan", "syncgate.unit", "syncgate.serve"]
    assert [(s.get("tests"), s.get("failures"), s.get("skipped")) for s in root] == [
        ("1", "0", "0"), ("2", "1", "0"), ("1", "0", "1")]
    assert (root.get("tests"), root.get("failures")) == ("4", "1")
    failing = root.find("testsuite[@name='syncgate.unit']/testcase[failure]")
    assert (failing.get("file"), failing.get("line")) == ("/t/r.py", "12")


def test_a_level_in_error_and_the_code_each_level_ran_reach_every_face(tmp_path):
    code = {"package": "vllm", "tree": "/src/vllm-branch", "commit": "ab" * 20,
            "overlay": "/cache/overlays/1", "installed": "/site/vllm"}
    levels = [LevelResult("scan", PASS, cases=[LevelCase("R.execute_model", True, "ok")],
                          code=code, cached_from="2026-12-01 11:00:00 UTC"),
              LevelResult("unit", "error", "error: compiled code differs: the tree declares "
                          "vllm 0.1.0", code=code)]
    text = sections(levels, None)
    assert "== scan: PASS (0.0 s; cached from 2026-12-01 11:00:00 UTC)" in text
    assert "== unit: ERROR (error: compiled code differs: the tree declares vllm 0.1.0)" in text
    assert summary(levels).startswith("scan PASS 0.0s, unit ERROR")
    paths = write_level_reports(tmp_path, levels, None, {})
    doc = json.loads(paths["json"].read_text())
    assert doc["passed"] is False
    assert doc["levels"]["unit"]["status"] == "error"
    assert doc["levels"]["unit"]["code"] == code
    assert doc["levels"]["scan"]["cached_from"] == "2026-12-01 11:00:00 UTC"
    root = ET.parse(paths["junit"]).getroot()
    unit = root.find("testsuite[@name='syncgate.unit']")
    assert unit.get("errors") == "1"
    assert unit.find("testcase/error").get("message").startswith("error: compiled code differs")
    props = {p.get("name"): p.get("value") for p in unit.findall("properties/property")}
    assert props == {"syncgate.code.tree": "/src/vllm-branch", "syncgate.code.commit": "ab" * 20,
                     "syncgate.code.overlay": "/cache/overlays/1",
                     "syncgate.code.installed": "/site/vllm"}


def test_changed_code_the_serve_level_did_not_run_is_named_on_every_face(tmp_path):
    """A serve level in ERROR because its runner overrides a changed method (check/untested.py):
    the reason, a NOT RUN line at the tree's file and line, a JUnit <skipped> case and <error>."""
    reason = ("error: changed code not run at this level: GPUModelRunner._to_list (overridden by "
              "CPUModelRunner on cpu); run the level where the tree's method is the one served")
    detail = ("vllm.v1.worker.gpu_model_runner:GPUModelRunner._to_list: not run at this level "
              "(overridden by CPUModelRunner on cpu)")
    levels = [LevelResult("serve", "error", reason, 80.0, cases=[LevelCase(
        "GPUModelRunner._to_list", False, detail, "/b/vllm/v1/worker/gpu_model_runner.py", 7180,
        skipped=True)])]
    text = sections(levels, None)
    assert f"== serve: ERROR ({reason})" in text
    assert (f"   GPUModelRunner._to_list  NOT TESTED  {detail}  "
            "[/b/vllm/v1/worker/gpu_model_runner.py:7180]") in text
    paths = write_level_reports(tmp_path, levels, None, {})
    [case] = json.loads(paths["json"].read_text())["levels"]["serve"]["cases"]
    assert case["skipped"] is True
    suite = ET.parse(paths["junit"]).getroot().find("testsuite[@name='syncgate.serve']")
    assert (suite.get("errors"), suite.get("skipped")) == ("1", "1")
    assert suite.find("testcase[@name='GPUModelRunner._to_list']/skipped").get("message") == detail

"""JUnit failures become GitHub ::error annotations at their file and line."""

import pytest

from vllm_syncgate.containers.annotate import (
    MAX_ANNOTATIONS,
    Annotation,
    annotation_lines,
    level_verdicts,
    report_annotations,
)
from vllm_syncgate.errors import ReportDirError

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="syncgate-check" tests="3">
  <testcase classname="scenario.batched" name="parity" file="vllm/v1/worker/gpu_model_runner.py" line="2310"/>
  <testcase classname="scenario.batched" name="budget" file="vllm/v1/worker/gpu_model_runner.py" line="2417">
    <failure message="decode step 3: 1 device_sync (budget 0) at torch.accelerator.synchronize, 50%: all"
      >trace</failure>
  </testcase>
  <testcase classname="tests.ut.npu.test_x" name="test_y">
    <error>collection
failed</error>
  </testcase>
</testsuite></testsuites>
"""


@pytest.fixture
def reports(tmp_path):
    (tmp_path / "junit.xml").write_text(JUNIT)
    return tmp_path


def test_failures_and_errors_are_annotated_passes_are_not(reports):
    found = report_annotations(reports)
    assert [a.title for a in found] == ["failure: scenario.batched.budget",
                                        "error: tests.ut.npu.test_x.test_y"]
    assert found[0].file == "vllm/v1/worker/gpu_model_runner.py"
    assert found[0].line == 2417
    assert found[1].file is None


def test_command_escapes_data_and_properties(reports):
    first, second = (a.command() for a in report_annotations(reports))
    assert first == ("::error file=vllm/v1/worker/gpu_model_runner.py,line=2417,"
                     "title=failure%3A scenario.batched.budget::decode step 3: 1 device_sync "
                     "(budget 0) at torch.accelerator.synchronize, 50%25: all")
    assert second == "::error title=error%3A tests.ut.npu.test_x.test_y::collection%0Afailed"


def test_annotation_lines_cap_the_commands(tmp_path):
    cases = "".join(f'<testcase name="t{i}"><failure message="m"/></testcase>'
                    for i in range(MAX_ANNOTATIONS + 2))
    (tmp_path / "junit.xml").write_text(f"<testsuite>{cases}</testsuite>")
    lines = annotation_lines(tmp_path)
    assert len(lines) == MAX_ANNOTATIONS + 1
    assert lines[-1] == "::warning::2 more failures; see the reports"


def test_bad_xml_and_missing_dir_are_report_dir_errors(tmp_path):
    with pytest.raises(ReportDirError, match="does not exist"):
        report_annotations(tmp_path / "nope")
    (tmp_path / "junit.xml").write_text("<testsuite><testcase>")
    with pytest.raises(ReportDirError, match=r"junit\.xml: not a readable JUnit XML file"):
        report_annotations(tmp_path)


def test_annotation_without_file_has_no_line():
    assert Annotation("t", "m", line=3).command() == "::error title=t::m"


def test_check_report_is_annotated_per_level_with_one_verdict(tmp_path):
    from vllm_syncgate.check.levels import FAIL, PASS, LevelCase, LevelResult, not_run
    from vllm_syncgate.check.levels_report import write_level_reports

    scan = LevelResult("scan", PASS, duration_s=1.5, cases=[LevelCase("R.execute_model", True, "ok")])
    unit = LevelResult("unit", FAIL, duration_s=2.0, cases=[
        LevelCase("npu.no_seq_lens_sync_without_speculation", False, "(a) event synchronize",
                  "vllm_ascend/worker/v2/model_runner.py", 428)])
    write_level_reports(tmp_path, [scan, unit, not_run("serve", [scan, unit])], None, {})
    [failure] = report_annotations(tmp_path)
    assert failure.title == "failure [unit]: syncgate.unit.npu.no_seq_lens_sync_without_speculation"
    assert (failure.file, failure.line) == ("vllm_ascend/worker/v2/model_runner.py", 428)
    assert level_verdicts(tmp_path) == [
        "::notice title=syncgate check%3A scan pass::PASS in 1.5 s",
        "::error title=syncgate check%3A unit fail::FAIL in 2.0 s",
        "::notice title=syncgate check%3A serve not-run::not run: the unit level failed "
        "(--keep-going runs it anyway)",
        "::error title=syncgate check verdict::FAIL (scan pass, unit fail, serve not-run)",
    ]


def test_a_report_json_that_is_not_json_is_a_report_dir_error(tmp_path):
    (tmp_path / "report.json").write_text("{")
    with pytest.raises(ReportDirError, match=r"report\.json: not a readable report"):
        level_verdicts(tmp_path)

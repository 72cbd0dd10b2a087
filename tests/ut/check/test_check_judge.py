"""Judging runs: HF parity, cross-scenario parity, scenario problems, sync budgets; the reports."""

import json
import xml.etree.ElementTree as ET

import pytest

from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.report import CheckResult, failure_lines, table, write_reports
from vllm_syncgate.errors import ReportDirError
from vllm_syncgate.parity import Tolerance

PROMPT, OTHER = (1, 10, 11), (1, 20)
REF = {PROMPT: [5, 6, 7, 8, 9, 10], OTHER: [3, 3, 4]}


def _judge(kit, groups):
    return judge(groups, kit["Reference"](REF), kit["budgets"], mode="exact",
                 tolerance=Tolerance(), default_runner="v1")


def _result(kit, groups):
    scenarios, group_verdicts = _judge(kit, groups)
    return CheckResult({"device": "cpu"}, {}, {}, scenarios, group_verdicts)


def test_matching_runs_within_budget_pass(judge_kit):
    k = judge_kit
    run = k["scenario_run"]("g", "sequential", [k["gen"]("p0", PROMPT, REF[PROMPT]),
                                                k["gen"]("p1", OTHER, REF[OTHER])],
                            k["clean_steps"]())
    [verdict], [group] = _judge(k, [k["group_run"]("g", [run])])
    assert verdict.passed, verdict.failures()
    assert group.passed
    assert verdict.sync.allowed  # the transfer wait was seen, and allowed by name


def test_one_corrupted_token_is_the_reported_divergence(judge_kit):
    k = judge_kit
    bad = [5, 6, 7, 99, 9, 10]
    run = k["scenario_run"]("g", "sequential", [k["gen"]("p0", PROMPT, bad)], k["clean_steps"]())
    result = _result(k, [k["group_run"]("g", [run])])
    [verdict] = result.scenarios
    assert not verdict.passed
    [issue] = verdict.hf
    assert (issue.divergence.index, issue.divergence.expected, issue.divergence.actual) == (3, 8, 99)
    assert issue.divergence.text["context"] == "fgh"
    assert "token 3: expected 8, got 99" in failure_lines(result)[0]


def test_scenarios_are_compared_with_each_other(judge_kit):
    k = judge_kit
    first = k["scenario_run"]("a", "sequential", [k["gen"]("p0", PROMPT, REF[PROMPT])],
                              k["clean_steps"]())
    second = k["scenario_run"]("b", "batched", [k["gen"]("p0", PROMPT, [5, 6, 0, 8, 9, 10])],
                               k["clean_steps"]())
    verdicts, _ = _judge(k, [k["group_run"]("a", [first]), k["group_run"]("b", [second])])
    assert verdicts[0].passed
    [peer] = verdicts[1].peers
    assert peer.against == "a/sequential:p0"
    assert peer.divergence.index == 2


def test_a_stopped_generation_only_has_to_be_a_prefix(judge_kit):
    k = judge_kit
    run = k["scenario_run"]("g", "stop_and_max_tokens",
                            [k["gen"]("p0/stop", PROMPT, [5, 6, 7], max_tokens=6, prefix_ok=True),
                             k["gen"]("p1/max2", OTHER, [3, 3])], k["clean_steps"]())
    [verdict], _ = _judge(k, [k["group_run"]("g", [run])])
    assert verdict.passed, verdict.failures()


def test_sync_heavy_steps_breach_the_budget_naming_the_site(judge_kit):
    k = judge_kit
    run = k["scenario_run"]("g", "sequential", [k["gen"]("p0", PROMPT, REF[PROMPT])],
                            k["mutant_steps"]())
    result = _result(k, [k["group_run"]("g", [run])])
    [verdict] = result.scenarios
    assert not verdict.passed
    kinds = {(b.step_kind.value, b.kind) for b in verdict.sync.breaches}
    assert ("decode", "device_sync") in kinds
    assert ("decode", "blocking_readback") in kinds
    assert any("mutants.py:27:_to_list" in line for line in failure_lines(result))


def test_scenario_problems_and_failed_requests_fail_it(judge_kit):
    k = judge_kit
    run = k["scenario_run"]("g", "preemption", [], problems=["no request was preempted"])
    run.error = "POST /v1/completions: HTTP 500"
    [verdict], _ = _judge(k, [k["group_run"]("g", [run])])
    assert not verdict.passed
    assert verdict.problems == ["no request was preempted",
                                "request failed: POST /v1/completions: HTTP 500"]


def test_speculation_the_worker_did_not_run_is_a_group_problem(judge_kit):
    k = judge_kit
    run = k["scenario_run"]("g", "spec_ngram", [k["gen"]("p0", PROMPT, REF[PROMPT])])
    _, [group] = _judge(k, [k["group_run"]("g", [run], speculation=True,
                                           worker_speculation=False)])
    assert not group.passed
    assert "speculation" in group.problems[0]


def test_generations_without_journaled_steps_fail(judge_kit):
    k = judge_kit
    run = k["scenario_run"]("g", "sequential", [k["gen"]("p0", PROMPT, REF[PROMPT])], steps=())
    [verdict], _ = _judge(k, [k["group_run"]("g", [run])])
    assert not verdict.passed
    assert "recorded no runner step" in verdict.problems[0]


def test_missing_prompt_ids_are_a_problem(judge_kit):
    k = judge_kit
    run = k["scenario_run"]("g", "sequential", [k["gen"]("p0", (), [1])], k["clean_steps"]())
    [verdict], _ = _judge(k, [k["group_run"]("g", [run])])
    assert "no prompt_token_ids" in verdict.problems[0]


def test_reports_carry_divergence_file_line_and_plot(judge_kit, tmp_path):
    k = judge_kit
    good = k["scenario_run"]("g", "sequential", [k["gen"]("p0", PROMPT, REF[PROMPT])],
                             k["clean_steps"]())
    bad = k["scenario_run"]("g", "batched", [k["gen"]("p0", PROMPT, [5, 6, 7, 8, 1, 10])],
                            k["mutant_steps"]())
    result = _result(k, [k["group_run"]("g", [good, bad])])
    paths = write_reports(result, tmp_path)
    report = json.loads(paths["json"].read_text())
    assert report["passed"] is False
    assert [s["passed"] for s in report["scenarios"]] == [True, False]
    assert report["scenarios"][1]["parity"]["hf"][0]["divergence"]["index"] == 4
    cases = ET.parse(paths["junit"]).getroot().findall("testcase")
    assert [c.get("name") for c in cases] == ["sequential", "batched"]
    # the passing case points at its scenario, the budget failure at the offending call site (issue 17)
    assert cases[0].get("file").endswith("scenarios.py")
    assert int(cases[0].get("line")) > 0
    assert (cases[1].get("file"), cases[1].get("line")) == ("/x/syncgate/audit/mutants.py", "27")
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure").text
    assert "token 4: expected 9, got 1" in failure
    assert "mutants.py:27:_to_list" in failure
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = table(result).splitlines()
    assert rows[2].startswith("g/sequential")
    assert rows[2].endswith("PASS")
    assert rows[3].startswith("g/batched")
    assert rows[3].endswith("FAIL")
    assert not list(tmp_path.glob(".*"))  # no temp file left behind


def test_unwritable_report_dir_is_a_report_dir_error(judge_kit, tmp_path):
    k = judge_kit
    run = k["scenario_run"]("g", "sequential", [k["gen"]("p0", PROMPT, REF[PROMPT])])
    with pytest.raises(ReportDirError, match="cannot write the report"):
        write_reports(_result(k, [k["group_run"]("g", [run])]), tmp_path / "gone")

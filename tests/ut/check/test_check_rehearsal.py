"""A device profile without its device: one line and exit 2 at once, or a rehearsal on CPU that
says so everywhere and marks what the CPU stack cannot show."""

import json
import xml.etree.ElementTree as ET

import pytest
import torch

from vllm_syncgate.audit.budgets import load_budgets
from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.plan import make_plan
from vllm_syncgate.check.rehearsal import device_problem, rehearse_profile
from vllm_syncgate.check.report import CheckResult, failure_lines, table, to_json, write_reports
from vllm_syncgate.cli import main
from vllm_syncgate.errors import EXIT_USAGE, EnvironmentProblem, UsageError
from vllm_syncgate.profiles import builtin_profile_path, load_profile

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")


def _profile(device):
    return load_profile(builtin_profile_path(device))


@pytest.mark.parametrize(("device", "looked_for"), [("cuda", "torch.cuda"), ("npu", "torch_npu")])
def test_missing_device_is_one_line_exit_2_naming_what_and_where(device, looked_for, tmp_path,
                                                                 capsys):
    report = tmp_path / "report"
    code = main(["check", "--device", device, "--report-dir", str(report)])
    err = capsys.readouterr()
    assert code == EXIT_USAGE
    [line] = err.err.strip().splitlines()
    assert line.startswith(f"syncgate check: error: --device {device}: no {device.upper()} here")
    assert f"looked for {looked_for} and a device" in line
    assert f"e2e-{device}" in line
    assert "--rehearse" in line
    assert err.out == ""  # not even the environment header: nothing ran
    assert not report.exists()


def test_present_device_is_not_refused_and_not_rehearsed(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert device_problem("cuda") is None
    make_plan("cuda", None, None, ["sequential"], str(tmp_path))  # no EnvironmentProblem
    with pytest.raises(UsageError, match="CUDA device is present here"):
        rehearse_profile(_profile("cuda"))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(EnvironmentProblem, match="reports 0 CUDA devices"):
        make_plan("cuda", None, None, ["sequential"], str(tmp_path))


def test_rehearsing_the_cpu_profile_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="cpu profile already"):
        make_plan("cpu", None, None, None, str(tmp_path), rehearse=True)


@pytest.mark.parametrize("device", ["cuda", "npu"])
def test_rehearsal_keeps_what_is_judged_and_takes_how_cpu_serves(device, tmp_path):
    original, cpu = _profile(device), _profile("cpu")
    plan = make_plan(device, None, None, None, str(tmp_path), rehearse=True)
    rehearsed, rehearsal = plan.profile, plan.rehearsal
    assert plan.stack == "cpu"
    assert rehearsal.device == device
    judged = ("device", "runner", "parity", "tolerance", "budget_file", "recipe", "seed")
    assert [getattr(rehearsed, k) for k in judged] == [getattr(original, k) for k in judged]
    assert [(g.name, g.scenarios, g.speculation) for g in rehearsed.groups] == [
        (g.name, g.scenarios, g.speculation) for g in original.groups]
    assert "logprob_parity" in rehearsed.groups[0].scenarios
    assert rehearsed.flags == cpu.flags
    assert rehearsed.env == cpu.env
    twins = {g.name: g.flags for g in cpu.groups}
    assert all(g.flags == twins[g.name] for g in rehearsed.groups)
    assert any(r.startswith("serve flags:") for r in rehearsal.replaced)
    graph = [gap for gap in rehearsal.profile_gaps if gap.startswith("graph replay")]
    assert bool(graph) == ("--enforce-eager" not in original.flags)  # cuda serves with graphs
    assert any("async-chunked-preempt runs sync scheduling" in g for g in rehearsal.profile_gaps)


def test_npu_rehearsal_marks_device_only_sites():
    _, rehearsal = rehearse_profile(_profile("npu"))
    budgets = load_budgets(_profile("npu").budget_file)
    gaps = rehearsal.not_shown(budgets, "npu/v1/spec-off")
    assert any("vllm_ascend.compilation.acl_graph:ACLGraphWrapper.__call__" in g for g in gaps)
    assert any(g.startswith("blocking_copy") for g in gaps)
    assert not any("GPUModelRunner._to_list" in g for g in gaps)  # shown on CPU, via overrides


def test_report_says_rehearsal_everywhere(judge_kit, tmp_path):
    k = judge_kit
    run = k["scenario_run"]("g", "sequential", [k["gen"]("p0", (1, 2), [5, 6])],
                            k["mutant_steps"]())
    scenarios, groups = judge([k["group_run"]("g", [run])], k["Reference"]({(1, 2): [5, 6]}),
                              k["budgets"], mode="exact", tolerance=None, default_runner="v1")
    _, rehearsal = rehearse_profile(_profile("cuda"))
    result = CheckResult({}, {}, {}, scenarios, groups,
                         rehearsal=rehearsal.to_json(k["budgets"]))
    assert table(result).splitlines()[0].startswith("REHEARSAL: the cuda profile on the cpu stack")
    assert "not shown by the CPU stack: blocking_copy" in table(result)
    assert failure_lines(result)[0] == "(rehearsal of cuda on cpu)"
    shown = to_json(result)
    assert shown["rehearsal"]["device"] == "cuda"
    [scenario] = shown["scenarios"]
    assert scenario["budget"] == "cpu/v1/spec-off (rehearsal of cuda on cpu)"
    assert scenario["sync_verdict"]["rehearsal"]["not_shown"]
    write_reports(result, tmp_path)
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert "rehearsal-cuda-on-cpu" in suite.get("name")
    assert all("rehearsal" in case.get("classname") for case in suite.iter("testcase"))
    assert json.loads((tmp_path / "report.json").read_text())["rehearsal"]["stack"] == "cpu"
    # the broken variant: the same result without the rehearsal says nothing of it
    plain = CheckResult({}, {}, {}, scenarios, groups)
    assert "rehearsal" not in table(plain).lower()
    assert to_json(plain)["rehearsal"] is None
    # (field by field: the scenarios' file paths may name a checkout folder called "rehearsal")
    [plain_scenario] = to_json(plain)["scenarios"]
    assert "rehearsal" not in plain_scenario["budget"]
    assert "rehearsal" not in plain_scenario["sync_verdict"]

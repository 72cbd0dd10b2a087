"""With ``--source``, the unit level names the changed functions of the tree's runners' folder that
no probe ran (traced in the probes' child), and one rule judges them with the serve level: never a
plain PASS for changed code no level ran."""

from pathlib import Path

import pytest

from vllm_syncgate.check.levels import ERROR, FAIL, NOT_RUN, PASS, LevelCase, LevelResult, errored, unit_coverage
from vllm_syncgate.check.levels_report import sections, summary
from vllm_syncgate.check.unprobed import changed_functions, not_probed

BASE = "v1/worker/base_runner.py"
RAN_UPDATE = ("v1/worker/base_runner.py", "GPUModelRunner._update_states")
RAN_TO_LIST = ("v1/worker/base_runner.py", "GPUModelRunner._to_list")


@pytest.fixture
def two_changes(branch):
    """A branch of the fixture package that changes _to_list and _update_states."""
    installed, tree, edit = branch
    edit(BASE, "        self.transfer_event.record()\n", "")
    edit(BASE, "        return None\n", "        return 1\n")
    return installed, tree


def _named(found):
    return [(n.module, n.qualname, n.line) for n in found]


def _line(tree, text):
    return (tree / BASE).read_text().splitlines().index(text) + 1


def test_a_changed_method_no_probe_ran_is_named_and_one_a_probe_ran_is_not(two_changes):
    installed, tree = two_changes
    found = not_probed(tree / "v1" / "worker", tree, installed, [RAN_UPDATE])
    assert _named(found) == [("vllm.v1.worker.base_runner", "GPUModelRunner._to_list",
                              _line(tree, "    def _to_list(self, sampled_token_ids):"))]
    assert found[0].file == tree / BASE
    assert found[0].describe() == ("vllm.v1.worker.base_runner:GPUModelRunner._to_list: not run by "
                                   "any unit probe")
    assert not_probed(tree / "v1" / "worker", tree, installed, [RAN_UPDATE, RAN_TO_LIST]) == []


def test_everything_treated_as_run_or_nothing_changed_names_nothing_and_the_check_sees_it(two_changes):
    installed, tree = two_changes
    worker = tree / "v1" / "worker"
    everything = [(f"v1/worker/{p.name}", q) for p in worker.glob("*.py")
                  for q, _ in changed_functions(p, installed / "v1" / "worker" / p.name)]
    assert not_probed(worker, tree, installed, everything) == []  # the broken variant: no case
    assert len(not_probed(worker, tree, installed, [])) == 2  # tracing disabled: both named
    assert not_probed(installed / "v1" / "worker", installed, installed, []) == []


def test_new_functions_and_nested_classes_count_and_comments_do_not(branch):
    installed, tree, edit = branch
    edit(BASE, "        self.transfer_event.synchronize()\n",
         "        self.transfer_event.synchronize()  # a comment only\n")
    runner = tree / BASE
    runner.write_text(runner.read_text() + "\n\ndef helper(x):\n    return x.item()\n\n\n"
                      "class Outer:\n    class Inner:\n        def go(self):\n            return 0\n")
    assert [q for q, _ in changed_functions(runner, installed / BASE)] == ["helper", "Outer.Inner.go"]
    (tree / "v1" / "worker" / "new_runner.py").write_text("def run():\n    return 1\n")
    assert [(n.module, n.qualname, n.line) for n in not_probed(tree / "v1" / "worker", tree,
                                                               installed, [])][-1] == (
        "vllm.v1.worker.new_runner", "run", 1)



def test_a_name_defined_twice_is_compared_with_each_definition(tmp_path):
    prop = ("class Held:\n    @property\n    def size(self):\n        return 1\n\n"
            "    @size.setter\n    def size(self, value):\n        self.n = value\n")
    (tmp_path / "before.py").write_text(prop)
    (tmp_path / "after.py").write_text(prop.replace("return 1", "return 2"))
    # the getter changed, the setter did not
    assert changed_functions(tmp_path / "after.py", tmp_path / "before.py") == [("Held.size", 3)]

def _unit(tree, status=PASS):
    file = str(tree / BASE)
    return LevelResult("unit", status, duration_s=2.0, cases=[
        LevelCase("probes.to_list", status == PASS, "ok"),
        LevelCase("GPUModelRunner._to_list", False, "vllm.v1.worker.base_runner:GPUModelRunner."
                  "_to_list: not run by any unit probe", file, 10, skipped=True)])


def test_without_a_serve_level_an_unprobed_change_is_a_unit_error_naming_it(branch):
    _, tree, _ = branch
    raw = [LevelResult("scan", PASS), _unit(tree)]
    [scan, unit] = unit_coverage(raw)
    assert unit.status == ERROR
    assert errored([scan, unit])
    assert unit.reason == (f"error: changed code not run by any unit probe: {tree / BASE}:10 "
                           "GPUModelRunner._to_list; the serve level did not run to cover it")
    assert raw[1].status == PASS  # the run's own list is kept for the verdict cache
    cant_start = LevelResult("serve", ERROR, "error: the tree does not import")
    assert unit_coverage([_unit(tree), cant_start])[0].status == ERROR


def test_after_another_level_failed_an_unprobed_change_leaves_the_check_failing_not_errored(
        branch):
    """The scan failed and the serve level was not run: the check fails (exit 1) whatever the
    unprobed change does; the unit level says what it left unjudged instead of turning the
    verdict into an error (exit 2)."""
    _, tree, _ = branch
    judged = unit_coverage([LevelResult("scan", FAIL), _unit(tree), LevelResult("serve", NOT_RUN)])
    unit = judged[1]
    assert unit.status == PASS
    assert unit.reason == ("1 changed method not run here nor by serve, not judged: another "
                           "level failed first")
    assert not errored(judged)


def test_a_serve_level_that_ran_covers_it_unless_it_names_it_not_tested(branch):
    _, tree, _ = branch
    for status in (PASS, FAIL):
        unit, serve = unit_coverage([_unit(tree), LevelResult("serve", status, duration_s=60.0)])
        assert unit.status == PASS
        assert unit.reason == "1 changed method not run here (covered by serve)"
    assert summary([unit, serve]) == ("unit PASS 2.0s [1 changed method not run here (covered by "
                                      "serve)], serve FAIL 60.0s")
    assert "== unit: PASS (2.0 s; 1 changed method not run here (covered by serve))" in sections(
        [unit], None)
    overridden = LevelCase("GPUModelRunner._to_list", False, "not run at this level (overridden by "
                           "CPUModelRunner on cpu)", str(tree / BASE), 10, skipped=True)
    unseen = LevelCase("GPUModelRunner._to_list blocking_readback Tensor.tolist", False, "not seen",
                       str(tree / BASE), 12, skipped=True)
    for case in (overridden, unseen):
        serve = LevelResult("serve", ERROR, "error: ...", cases=[case])
        unit, _ = unit_coverage([_unit(tree), serve])
        assert unit.status == ERROR
        assert unit.reason.endswith("; the serve level did not run it either (its NOT TESTED cases)")
    other = LevelCase("GPUModelRunner._update_states", False, "x", str(tree / BASE), 15, skipped=True)
    unit, _ = unit_coverage([_unit(tree), LevelResult("serve", ERROR, "error: ...", cases=[other])])
    assert unit.status == PASS


def test_a_failing_unit_level_stays_fail_and_one_without_changes_is_untouched(branch):
    _, tree, _ = branch
    [unit] = unit_coverage([_unit(tree, FAIL)])
    assert unit.status == FAIL
    assert unit.reason == ""
    clean = LevelResult("unit", PASS, cases=[LevelCase("probes.to_list", True, "ok")])
    assert unit_coverage([clean]) == [clean]
    assert summary([clean]) == "unit PASS 0.0s"


@pytest.fixture(scope="module")
def probes_ran():
    """The functions of the installed vLLM that the shipped probes run (traced in-process)."""
    import vllm

    from vllm_syncgate.unit.ran import FunctionsRun
    from vllm_syncgate.unit.vllm_probes import probe_vllm

    with FunctionsRun(Path(vllm.__file__).parent) as ran:
        assert probe_vllm("cuda").passed
    return ran.functions()


@pytest.mark.slow
@pytest.mark.parametrize(("method", "named"), [
    ("_update_states", []),  # the update_states probe runs it
    ("_prepare_input_ids", ["GPUModelRunner._prepare_input_ids"]),  # a helper of the step: not run
])
def test_on_vllm_the_probes_run_update_states_not_prepare_input_ids(probes_ran, vllm_branch,
                                                                     edit_method, method, named):
    import importlib.util

    installed = Path(next(iter(importlib.util.find_spec("vllm").submodule_search_locations)))
    root = vllm_branch(f"unprobed{method}", lambda pkg: edit_method(
        pkg / "v1/worker/gpu_model_runner.py", "GPUModelRunner", method,
        prepend=["self.last_first_token = None"]))
    pkg = root / "vllm"
    found = not_probed(pkg / "v1" / "worker", pkg, installed, probes_ran)
    assert [n.qualname for n in found] == named
    assert not_probed(pkg / "v1" / "worker", pkg, installed, []) != []  # the check can fail

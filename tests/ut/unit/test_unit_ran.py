"""The unit level's tracer records the functions that ran and not those that did not: measured,
so that a branch's changed method no probe ran is named (check/unprobed.py), never passed."""

import importlib
import sys
import threading
from pathlib import Path

import pytest

from vllm_syncgate.unit.ran import FunctionsRun

STEP = [("runner.py", "Runner._helper"), ("runner.py", "Runner.step")]


class TracingDisabled(FunctionsRun):
    """Broken variant: the hook records nothing."""

    def _call(self, frame, event, arg):
        return None


class EverythingRan(FunctionsRun):
    """Broken variant: every function of the files under the root counts as run."""

    def functions(self):
        import inspect

        module = sys.modules["syncgate_ran_fixture.runner"]
        return sorted(("runner.py", f"Runner.{name}") for name, _ in
                      inspect.getmembers(module.Runner, inspect.isfunction))


@pytest.fixture
def runner(data_dir, monkeypatch):
    """The fixture package's runner module, imported from tests/data/unit/ran."""
    monkeypatch.syspath_prepend(str(data_dir / "unit" / "ran"))
    return importlib.import_module("syncgate_ran_fixture.runner")


def _step_traced(runner, tracer=FunctionsRun):
    with tracer(Path(runner.__file__).parent) as ran:
        runner.Runner().step()
    return ran.functions()


def test_a_method_that_ran_is_recorded_and_one_that_did_not_is_not(runner):
    # step and its helper; not unused(), not the generator expression, nothing outside the root
    assert _step_traced(runner) == STEP


@pytest.mark.parametrize("broken", [TracingDisabled, EverythingRan])
def test_a_broken_tracer_fails_that_check(runner, broken):
    assert _step_traced(runner, broken) != STEP


def test_functions_run_in_a_thread_started_in_the_block_are_recorded(runner):
    with FunctionsRun(Path(runner.__file__).parent) as ran:
        assert runner.Runner().in_a_thread() == [2]
    assert ran.functions() == [("runner.py", "Runner._from_thread"), ("runner.py", "Runner.in_a_thread")]


def test_the_hooks_in_place_before_are_back_after(runner):
    def other(frame, event, arg):
        return None

    before = (sys.gettrace(), threading.gettrace())
    try:
        sys.settrace(other)
        threading.settrace(other)
        with FunctionsRun(Path(runner.__file__).parent):
            assert sys.gettrace() is not other
        assert (sys.gettrace(), threading.gettrace()) == (other, other)
    finally:
        sys.settrace(before[0])
        threading.settrace(before[1])

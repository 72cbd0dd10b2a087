import shutil

import pytest

from vllm_syncgate.errors import UsageError
from vllm_syncgate.repro.logs import parse_log
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome
from vllm_syncgate.repro.reproduce import ReproVerdict, RerunConfig, reproduce
from vllm_syncgate.repro.runner import LocalRunner

EXPECTED = {
    "case_broken.py::TestAlways::test_broken": ReproVerdict.BROKEN,
    "case_flaky.py::test_flaky_half": ReproVerdict.FLAKY,
    "case_flaky.py::test_flaky_third": ReproVerdict.FLAKY,
    "case_flaky.py::test_ci_only": ReproVerdict.NOT_REPRODUCED,
    "case_flaky.py::test_labels[x - y]": ReproVerdict.NOT_REPRODUCED,
    "case_flaky.py::test_labels[[nested]]": ReproVerdict.NOT_REPRODUCED,
    "case_flaky.py::test_labels[\\xfc]": ReproVerdict.NOT_REPRODUCED,
    "case_order.py::test_victim": ReproVerdict.ORDER_DEPENDENT,
    "case_collect_error.py": ReproVerdict.ENVIRONMENT,
}


class RecordingRunner(LocalRunner):
    """The real local runner, remembering every argv it was asked to run."""

    def __init__(self, rootdir, **kw):
        super().__init__(rootdir, **kw)
        self.calls = []

    def pytest(self, args, plan=None):
        self.calls.append((list(args), plan))
        result = super().pytest(args, plan)
        self.records = result.records
        return result


@pytest.mark.slow
def test_synthetic_suite_is_classified_exactly(repro_logs, suite_dir, suite_outcome):
    log = parse_log(repro_logs / "github_job.txt")
    verdicts = reproduce(log, LocalRunner(suite_dir),
                         RerunConfig(runs=12, workers=2, broken_after=3, replay_order=True))
    by_id = {v.nodeid: v for v in verdicts}
    assert {n: v.verdict for n, v in by_id.items()} == EXPECTED
    # Every recorded run is the outcome the suite's seeded coin gives for that run index.
    for name, probability in (("flaky_half", 0.5), ("flaky_third", 0.3)):
        runs = by_id[f"case_flaky.py::test_{name}"].runs
        assert [r.outcome == "failed" for r in runs] == [
            suite_outcome(name, probability, r.run) for r in runs]
    broken = by_id["case_broken.py::TestAlways::test_broken"]
    assert "arithmetic is broken" in broken.first_traceback
    assert broken.interval[1] == 1.0
    ci_only = by_id["case_flaky.py::test_ci_only"]
    assert (len(ci_only.runs), len(ci_only.replays)) == (12, 3)
    assert ci_only.upper_bound == pytest.approx(1 - 0.05 ** (1 / 12))
    victim = by_id["case_order.py::test_victim"]
    assert (victim.failures, victim.replay_failures) == (0, 1)
    assert victim.predecessors[-1] == "case_order.py::test_polluter"
    assert "state left by test_polluter" in victim.first_traceback


@pytest.mark.parametrize(("early_stop", "min_runs", "runs"),
                         [(True, 5, (3, 5)), (True, 1, (3, 2)), (False, 5, (12, 12))])
def test_early_stop_ends_a_test_once_its_verdict_is_settled(repro_logs, suite_dir, early_stop,
                                                            min_runs, runs):
    # In one process the stop is exact: broken after --broken-after=3 failures; flaky once it
    # has passed (run 1) and failed (run 2) and --min-runs runs are done, never before.
    log = parse_log(repro_logs / "pytest_quiet.txt")
    keep = {"case_broken.py::TestAlways::test_broken", "case_flaky.py::test_flaky_half"}
    log.failures = [f for f in log.failures if f.nodeid in keep]
    verdicts = reproduce(log, LocalRunner(suite_dir), RerunConfig(
        runs=12, workers=1, broken_after=3, min_runs=min_runs, early_stop=early_stop))
    assert [(v.verdict, len(v.runs)) for v in verdicts] == [
        (ReproVerdict.BROKEN, runs[0]), (ReproVerdict.FLAKY, runs[1])]


@pytest.mark.slow
def test_mutants_a_fixed_test_and_a_log_without_order(repro_logs, suite_dir, tmp_path):
    # The verdicts come from the reruns, not from test names: fix the broken test and drop the
    # CI history of the order-dependent one, and the same failures are no longer reproduced.
    fixed = tmp_path / "suite"
    shutil.copytree(suite_dir, fixed)
    (fixed / "case_broken.py").write_text(
        "class TestAlways:\n    def test_broken(self):\n        assert 1 + 1 == 2\n")
    # A project that stops at the first failure must not cut the reruns short, and one that
    # always asks for xdist workers must still collect and replay in one process.
    ini = fixed / "pytest.ini"
    ini.write_text(ini.read_text().replace("addopts = ", "addopts = -x -n 2 "))
    log = parse_log(repro_logs / "pytest_quiet.txt")  # -q output: no test order at all
    keep = {"case_broken.py::TestAlways::test_broken", "case_order.py::test_victim",
            "case_flaky.py::test_flaky_half"}
    log.failures = [f for f in log.failures if f.nodeid in keep]
    verdicts = reproduce(log, LocalRunner(fixed),
                         RerunConfig(runs=4, workers=1, replay_order=True, early_stop=False))
    assert {v.nodeid: (v.verdict, len(v.runs), len(v.replays)) for v in verdicts} == {
        "case_broken.py::TestAlways::test_broken": (ReproVerdict.NOT_REPRODUCED, 4, 0),
        "case_order.py::test_victim": (ReproVerdict.NOT_REPRODUCED, 4, 0),
        "case_flaky.py::test_flaky_half": (ReproVerdict.FLAKY, 4, 0)}


def test_missing_and_hostile_node_ids_never_reach_pytest(suite_dir):
    log = CiLog(source="crafted", format="pytest", failures=[
        CiFailure("case_flaky.py::test_removed", CiOutcome.FAILED),
        CiFailure("case_gone.py::test_x", CiOutcome.FAILED),
        CiFailure("-p evil.py::x", CiOutcome.FAILED),
        CiFailure("../outside.py::test_x", CiOutcome.FAILED),
        CiFailure("case_flaky.py::test_fine --co", CiOutcome.FAILED),
    ])
    runner = RecordingRunner(suite_dir)
    verdicts = reproduce(log, runner, RerunConfig(runs=2))
    assert {v.nodeid: v.verdict for v in verdicts} == dict.fromkeys(
        [f.nodeid for f in log.failures], ReproVerdict.MISSING)
    details = {v.nodeid: v.detail for v in verdicts}
    assert details["case_flaky.py::test_removed"] == "no such test in the collected tree"
    assert details["case_gone.py::test_x"] == "file not found here"
    assert details["-p evil.py::x"] == "not a test node id"
    # One session ran (validation folded into the rerun), only over files that exist; the
    # log's ids reached it in the plan, never in argv.
    assert len(runner.calls) == 1
    args, plan = runner.calls[0]
    assert plan["report_collected"] is True
    assert args[-1] == "case_flaky.py"
    assert not any("evil" in a or "outside" in a or "gone" in a or "::" in a for a in args)


@pytest.mark.parametrize("workers", [1, 2])
def test_hostile_ids_next_to_a_real_failure_come_out_missing_in_the_folded_session(
        suite_dir, workers):
    """Validation and rerun in one session: the real failure is rerun, ids that only look like
    its node id (an option appended, a bracket cut, a path climbing out) are 'missing', and no
    string from the log is in pytest's argv (xdist or not)."""
    real = "case_broken.py::TestAlways::test_broken"
    hostile = [f"{real} -p evil", f"{real} --co", "case_broken.py::TestAlways::test_broken[",
               "case_broken.py::TestAlways", "case_broken.py::../case_flaky.py::test_flaky_half"]
    log = CiLog(source="crafted", format="pytest",
                failures=[CiFailure(n, CiOutcome.FAILED) for n in [real, *hostile]])
    runner = RecordingRunner(suite_dir)
    verdicts = reproduce(log, runner, RerunConfig(runs=3, workers=workers))
    by_id = {v.nodeid: v for v in verdicts}
    assert by_id[real].verdict is ReproVerdict.BROKEN
    assert {n: by_id[n].verdict for n in hostile} == dict.fromkeys(hostile, ReproVerdict.MISSING)
    assert {by_id[n].detail for n in hostile} == {"no such test in the collected tree"}
    assert all(not by_id[n].runs for n in hostile)
    assert not any(r["target"] in hostile for r in runner.records if "target" in r)  # never run
    [(args, plan)] = runner.calls
    assert args[-1] == "case_broken.py"
    assert not any("::" in a or "evil" in a for a in args)
    assert set(plan["targets"]) == {real, *hostile}  # compared with the collected ids only


def test_xunit2_addresses_resolve_and_only_collected_ids_are_rerun(repro_logs, suite_dir):
    log = parse_log(repro_logs / "junit_xunit2.xml")
    log.failures = [f for f in log.failures if "labels" in f.nodeid or "collect" in f.nodeid
                    or "TestAlways" in f.nodeid]
    log.failures.append(CiFailure("case_flaky.py::test_fine --co", CiOutcome.FAILED))
    # A per-file runner line for a crashed file: the whole file is the unit rerun.
    log.failures.append(CiFailure("case_order.py", CiOutcome.FAILED, detail="exit code -9"))
    runner = RecordingRunner(suite_dir)
    verdicts = reproduce(log, runner, RerunConfig(runs=2, workers=1))
    assert {v.nodeid: v.verdict for v in verdicts} == {
        "case_collect_error.py": ReproVerdict.ENVIRONMENT,
        "case_broken.py::TestAlways::test_broken": ReproVerdict.BROKEN,
        "case_flaky.py::test_labels[x - y]": ReproVerdict.NOT_REPRODUCED,
        "case_flaky.py::test_labels[[nested]]": ReproVerdict.NOT_REPRODUCED,
        "case_flaky.py::test_labels[\\xfc]": ReproVerdict.NOT_REPRODUCED,
        "case_flaky.py::test_fine --co": ReproVerdict.MISSING,
        # polluter then victim, every run: as a file it fails every time
        "case_order.py": ReproVerdict.BROKEN,
    }
    whole_file = next(v for v in verdicts if v.nodeid == "case_order.py")
    assert (whole_file.failures, len(whole_file.runs)) == (2, 2)
    args, plan = runner.calls[1]
    assert sorted(plan["targets"]) == sorted(args[-5:])
    assert "case_flaky.py::test_fine --co" not in args


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [({"runs": 0}, "--runs must be at least 1"), ({"workers": 0}, "--workers"),
     ({"target_rate": 1.5}, "--target-rate"), ({"replay_runs": 0}, "--replay-runs"),
     ({"min_runs": 0}, "--min-runs"),
     ({"interval": "bayes"}, "--interval")],
)
def test_bad_config_is_a_usage_error(kwargs, problem):
    with pytest.raises(UsageError, match=problem):
        RerunConfig(**kwargs).validate()


def test_default_runs_rule_out_five_percent():
    assert RerunConfig().resolved_runs() == 59


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_a_crashing_worker_counts_as_a_failed_run(suite_dir, workers):
    # Runs 2 and 3 kill their process (as a segfault would). With xdist the crash report is
    # matched back to its run; without it the session dies and its open run is the crash.
    log = CiLog(source="ci", format="pytest",
                failures=[CiFailure("case_crash.py::test_crashes_sometimes", CiOutcome.FAILED)])
    [verdict] = reproduce(log, LocalRunner(suite_dir),
                          RerunConfig(runs=6, workers=workers, early_stop=False))
    outcomes = [(r.run, r.outcome, r.phase) for r in verdict.runs]
    expected = [(1, "passed", ""), (2, "error", "crash"), (3, "error", "crash"),
                (4, "passed", ""), (5, "passed", ""), (6, "passed", "")]
    assert verdict.verdict is ReproVerdict.FLAKY
    assert outcomes == (expected if workers == 2 else expected[:2])


@pytest.mark.parametrize("workers", [1, 2])
def test_folded_session_reports_a_file_that_does_not_collect_here(suite_dir, workers):
    """CI ran a test of a file that fails to collect here: environment, from the one session's
    own collection errors, while the other failure is rerun in that same session."""
    log = CiLog(source="crafted", format="pytest", failures=[
        CiFailure("case_collect_error.py::test_x", CiOutcome.FAILED),
        CiFailure("case_broken.py::TestAlways::test_broken", CiOutcome.FAILED)])
    runner = RecordingRunner(suite_dir)
    verdicts = {v.nodeid: v for v in reproduce(log, runner, RerunConfig(runs=2, workers=workers))}
    assert len(runner.calls) == 1
    env = verdicts["case_collect_error.py::test_x"]
    assert env.verdict is ReproVerdict.ENVIRONMENT
    assert env.detail.startswith("case_collect_error.py does not collect here: ")
    broken = verdicts["case_broken.py::TestAlways::test_broken"]
    assert (broken.verdict, len(broken.runs)) == (ReproVerdict.BROKEN, 2)

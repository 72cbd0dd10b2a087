import zipfile
from pathlib import Path

import pytest

from vllm_syncgate.errors import LogParseError
from vllm_syncgate.repro.logs import clean_line, parse_log, split_nodeid
from vllm_syncgate.repro.model import CiOutcome

FAILED = {
    "case_broken.py::TestAlways::test_broken",
    "case_flaky.py::test_flaky_half",
    "case_flaky.py::test_flaky_third",
    "case_flaky.py::test_ci_only",
    "case_flaky.py::test_labels[x - y]",
    "case_flaky.py::test_labels[[nested]]",
    "case_flaky.py::test_labels[\\xfc]",
    "case_order.py::test_victim",
}
COLLECTION = {"case_collect_error.py"}


def outcomes(log):
    return {f.nodeid: f.outcome for f in log.failures}


def expected():
    return {**dict.fromkeys(FAILED, CiOutcome.FAILED),
            **dict.fromkeys(COLLECTION, CiOutcome.COLLECTION_ERROR)}


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("github_job.txt", "github"), ("gh_run_view_log_failed.txt", "gh"),
     ("pytest_quiet.txt", "pytest"), ("pytest_quiet_crlf.txt", "pytest"),
     ("junit_xunit1.xml", "junit")],
)
def test_every_text_format_yields_the_same_failures(repro_logs, name, fmt):
    log = parse_log(repro_logs / name)
    assert log.format == fmt
    assert outcomes(log) == expected()
    assert not log.truncated


def test_raw_github_log_keeps_seed_env_header_annotations_and_order(repro_logs):
    log = parse_log(repro_logs / "github_job.txt")
    assert log.seed == 4242
    assert log.env["image"] == "ghcr.io/example/syncgate:cpu-2026.11"
    assert log.env["torch"] == "2.13.0+cpu"
    assert log.annotations == ["Process completed with exit code 1."]
    assert log.counts == {"failed": 8, "passed": 3, "errors": 1}
    victim = next(f for f in log.failures if f.nodeid == "case_order.py::test_victim")
    assert victim.predecessors[-1] == "case_order.py::test_polluter"


def test_gh_log_tracks_jobs_and_xdist_workers(repro_logs):
    log = parse_log(repro_logs / "gh_run_view_log_failed.txt")
    assert {f.job for f in log.failures} == {"e2e-cpu (3.11)"}
    victim = next(f for f in log.failures if f.nodeid == "case_order.py::test_victim")
    # Only what ran on the victim's own worker counts as its history.
    assert victim.worker.startswith("gw")
    polluter_worker = {f.worker for f in log.failures if f.nodeid.startswith("case_flaky")}
    assert victim.predecessors == ("case_order.py::test_polluter",)
    assert victim.worker not in polluter_worker


def test_vllm_ascend_runner_lines_give_tests_and_whole_files(repro_logs):
    log = parse_log(repro_logs / "vllm_ascend_run_suite.txt")
    found = outcomes(log)
    # Per-test lines inside a file's group win; a crashed file with none is rerun whole.
    assert found.pop("case_gone.py") is CiOutcome.FAILED
    assert found == expected()
    gone = next(f for f in log.failures if f.nodeid == "case_gone.py")
    assert gone.detail == "file exited with code -11"
    broken = next(f for f in log.failures if f.nodeid.startswith("case_broken"))
    assert broken.predecessors == ()
    victim = next(f for f in log.failures if f.nodeid == "case_order.py::test_victim")
    assert victim.predecessors == ("case_order.py::test_polluter",)


def test_xunit2_keeps_addresses_for_resolution(repro_logs):
    log = parse_log(repro_logs / "junit_xunit2.xml")
    addresses = {f.address for f in log.failures if f.outcome is CiOutcome.FAILED}
    assert ("case_broken.TestAlways", "test_broken") in addresses
    assert ("case_flaky", "test_labels[\\xfc]") in addresses
    assert len(addresses) == len(FAILED)


def test_reportlog_gives_phases_and_workers(repro_logs):
    log = parse_log(repro_logs / "pytest_reportlog.jsonl")
    assert outcomes(log) == {
        "case_collect_error.py": CiOutcome.COLLECTION_ERROR,
        "case_flaky.py::test_labels[\\xfc]": CiOutcome.FAILED,
        "case_order.py::test_victim": CiOutcome.FAILED,
        "case_broken.py::TestAlways::test_broken": CiOutcome.ERROR,
    }
    victim = next(f for f in log.failures if f.nodeid == "case_order.py::test_victim")
    assert (victim.worker, victim.predecessors) == ("gw1", ("case_order.py::test_polluter",))


def test_truncated_log_is_flagged_and_still_yields_what_it_saw(repro_logs):
    log = parse_log(repro_logs / "github_job_truncated.txt")
    assert log.truncated
    assert "case_flaky.py::test_labels[[nested]]" in outcomes(log)
    assert "case_order.py::test_victim" not in outcomes(log)


def test_run_log_zip_picks_the_fuller_twin_per_job(repro_logs, tmp_path):
    archive = tmp_path / "logs_123.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("0_e2e-cpu.txt", (repro_logs / "github_job.txt").read_bytes())
        z.writestr("-2147483648_e2e-cpu.txt", b"2026-04-25T05:18:16.1Z partial\n")
        z.writestr("1_lint.txt", b"2026-04-25T05:18:16.1Z All checks passed!\n")
        z.writestr("e2e-cpu/3_Run tests.txt", b"FAILED not/this.py::test_x\n")
    log = parse_log(archive)
    assert log.format == "zip"
    assert outcomes(log) == expected()
    assert {f.job for f in log.failures} == {"e2e-cpu"}


def test_log_without_failures_is_not_an_error(tmp_path):
    path = tmp_path / "green.txt"
    path.write_text("tests/a.py::test_x PASSED [100%]\n===== 1 passed in 0.01s =====\n")
    log = parse_log(path)
    assert log.failures == []
    assert log.counts == {"passed": 1}
    assert not log.truncated


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"", "empty file"), (b"\x7fELF\x02\x01\x00\x00binary", "binary file"),
     (bytes(range(128, 256)) * 50, "binary file"), (b"PK\x03\x04garbage", "damaged zip"),
     (b"<?xml version='1.0'?><html><body/></html>", "is not JUnit"),
     (b"<testsuites><testsuite", "not well-formed")],
)
def test_bad_input_is_a_one_line_typed_error(tmp_path, content, problem):
    path = tmp_path / "bad.log"
    path.write_bytes(content)
    with pytest.raises(LogParseError, match=problem) as info:
        parse_log(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(LogParseError, match="cannot read"):
        parse_log(tmp_path / "nope.txt")
    with pytest.raises(LogParseError, match="is a directory"):
        parse_log(tmp_path)


@pytest.mark.parametrize(
    ("text", "nodeid"),
    [("t.py::test[a - b] - AssertionError: x", "t.py::test[a - b]"),
     ("t.py::test[[x]] - E", "t.py::test[[x]]"), ("t.py::K::test_y", "t.py::K::test_y"),
     ("t.py::test[a b] - ", "t.py::test[a b]")],
)
def test_split_nodeid_respects_brackets(text, nodeid):
    assert split_nodeid(text) == nodeid


def test_clean_line_strips_transport_decorations():
    line = "2026-04-25T05:18:16.2685185Z \x1b[31mFAILED\x1b[0m t.py::\x1b[1mtest_x\x1b[0m\r\n"
    assert clean_line(line) == "FAILED t.py::test_x"


@pytest.mark.slow
def test_50mb_log_is_streamed_in_bounded_memory(tmp_path, monkeypatch):
    # The generator and the measuring script are the benchmark's own (one source of truth).
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import bench_repro

    path = tmp_path / "big.txt"
    tests = bench_repro.write_big_log(path, 50)
    failures, seen, _wall, growth_mb, _cpu = bench_repro.parse_once(path)
    assert failures == tests // 1000
    assert seen == tests
    # The log is 50 MB; a parser that held it (or its lines) would grow by more than that.
    assert growth_mb < 25, f"peak RSS grew by {growth_mb} MB while parsing"


def test_verbose_output_interleaved_with_captured_prints(tmp_path):
    # pytest -sv (vllm-ascend's runner): the outcome lands after whatever the test printed.
    path = tmp_path / "sv.txt"
    path.write_text(
        "tests/e2e/test_a.py::test_x[tp 2] INFO 04-25 engine started\n"
        "INFO 04-25 step 1 done\n"
        "PASSED\n"
        "tests/e2e/test_a.py::test_y Loading weights\n"
        "\x1b[31mFAILED\x1b[0m\n"
        "tests/e2e/test_a.py::test_z PASSED\n"
        "=========== 1 failed, 2 passed in 9.00s ===========\n")
    log = parse_log(path)
    assert [(f.nodeid, f.predecessors) for f in log.failures] == [
        ("tests/e2e/test_a.py::test_y", ("tests/e2e/test_a.py::test_x[tp 2]",))]
    assert log.tests_seen == 3

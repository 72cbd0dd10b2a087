"""The gate entry point: header first, then the job becomes the process and keeps its exit code."""

import subprocess
import sys

import pytest

from vllm_syncgate.containers.gate import CLAIMS, GateSettings, env_header, job_argv
from vllm_syncgate.environment import parse_header
from vllm_syncgate.errors import UsageError

SETTINGS = GateSettings(device="npu", report_dir="/reports", ut_paths=("tests/ut/npu",),
                        image="syncgate-npu:x")


def test_settings_from_env_defaults_and_overrides():
    assert GateSettings.from_env({}) == GateSettings("cpu", "/reports", ("tests/ut",), None)
    env = {"SYNCGATE_DEVICE": "npu", "SYNCGATE_REPORT_DIR": "/r", "SYNCGATE_UT_PATHS": "a b",
           "SYNCGATE_IMAGE": "img", "SYNCGATE_GROUPS": "g1,g2"}
    assert GateSettings.from_env(env) == GateSettings("npu", "/r", ("a", "b"), "img", "g1,g2")
    assert GateSettings.from_env({"SYNCGATE_GROUPS": ""}).groups is None  # compose's default


def test_unknown_device_is_a_usage_error():
    with pytest.raises(UsageError, match="SYNCGATE_DEVICE='tpu'"):
        GateSettings.from_env({"SYNCGATE_DEVICE": "tpu"})


@pytest.mark.parametrize(("job", "expected"), [
    ([], ["syncgate", "check", "-v", "--device", "npu", "--report-dir", "/reports"]),
    (["check", "--scenarios", "batched"],
     ["syncgate", "check", "-v", "--device", "npu", "--report-dir", "/reports", "--scenarios",
      "batched"]),
    (["ut", "-x"], [sys.executable, "-m", "pytest", "tests/ut/npu",
                    "--junitxml=/reports/junit-ut-npu.xml", "-x"]),
    (["bash", "-lc", "true"], ["bash", "-lc", "true"]),
])
def test_job_argv(job, expected):
    assert job_argv(job, SETTINGS) == expected


def test_a_runner_s_share_of_the_groups_goes_to_check_only():
    """e2e-npu on several runners: each sets SYNCGATE_GROUPS, `check merge` joins the reports."""
    share = GateSettings("npu", "/reports", ("tests/ut",), None, groups="baseline,ngram")
    assert job_argv(["check"], share) == ["syncgate", "check", "-v", "--device", "npu",
                                          "--report-dir", "/reports", "--groups", "baseline,ngram"]
    assert job_argv(["ut"], share)[-1] == "--junitxml=/reports/junit-ut-npu.xml"


def test_environment_reports_versions_from_metadata():
    env = env_header(SETTINGS)
    assert env["device"] == "npu"
    assert env["image"] == "syncgate-npu:x"
    assert env["syncgate"]
    assert env["torch"].startswith("2.")


def _gate(*args, env=None):
    return subprocess.run([sys.executable, "-m", "vllm_syncgate.containers.gate", *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", **(env or {})})


def test_header_comes_first_and_the_exit_code_is_the_job_s():
    result = _gate(sys.executable, "-c", "import sys; print('job ran'); sys.exit(3)",
                   env={"SYNCGATE_IMAGE": "img:1"})
    first, second = result.stdout.splitlines()[:2]
    header = parse_header(first)
    assert header is not None
    assert header["image"] == "img:1"
    assert header["device"] == "cpu"
    assert second == "job ran"
    assert result.returncode == 3


def test_a_job_that_does_not_exist_exits_127_with_one_line():
    result = _gate("no-such-job-xyz")
    assert result.returncode == 127
    assert result.stderr.strip() == ("syncgate-gate: error: cannot run 'no-such-job-xyz': "
                                     "No such file or directory")


def test_a_bad_device_exits_2_before_any_job_runs():
    result = _gate("true", env={"SYNCGATE_DEVICE": "tpu"})
    assert result.returncode == 2
    assert result.stdout == ""
    assert "SYNCGATE_DEVICE='tpu'" in result.stderr


def test_check_job_leaves_the_header_to_syncgate_check(tmp_path):
    # `syncgate check` prints the fuller header itself; a second one from the gate could disagree.
    fake = tmp_path / "syncgate"
    fake.write_text('#!/bin/sh\necho "fake check $*"\n')
    fake.chmod(0o755)
    result = _gate("check", env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["fake check check -v --device cpu --report-dir /reports"]


def test_replicas_of_a_scaled_shard_service_claim_distinct_indices(tmp_path):
    """compose --scale gives no index: each replica claims the first free one in the report dir."""
    settings = GateSettings("cpu", str(tmp_path), ("tests/ut",), None, shard_count=3)
    argvs = [job_argv(["repro-shard", "/reports/ci.log", "--runs", "8"], settings)
             for _ in range(3)]
    assert [a[a.index("--shard") + 1] for a in argvs] == ["1/3", "2/3", "3/3"]
    assert argvs[0] == ["syncgate", "repro", "/reports/ci.log", "--shard", "1/3",
                        "--report-dir", str(tmp_path), "--runs", "8"]
    assert (tmp_path / CLAIMS / "2").read_text().strip()  # the replica's host name
    with pytest.raises(UsageError, match="all 3 shard indices are claimed"):
        job_argv(["repro-shard", "/reports/ci.log"], settings)


def test_claims_are_exclusive_across_processes(tmp_path):
    """Eight processes race for four indices: each index is won once, four lose with exit 2."""
    code = ("import sys; from vllm_syncgate.containers.gate import claim_shard; "
            f"print(claim_shard({str(tmp_path)!r}, 4, 'p'))")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True) for _ in range(8)]
    won = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(w for w in won if w) == ["1", "2", "3", "4"]
    assert sum(p.returncode != 0 for p in procs) == 4


@pytest.mark.parametrize(("env", "problem"), [
    ({"SYNCGATE_SHARD_COUNT": "0"}, "SYNCGATE_SHARD_COUNT='0'"),
    ({"SYNCGATE_SHARD_COUNT": "four"}, "SYNCGATE_SHARD_COUNT='four'"),
    ({}, "needs the log and SYNCGATE_SHARD_COUNT"),
])
def test_a_bad_shard_setting_exits_2_before_any_job_runs(env, problem, tmp_path):
    result = _gate("repro-shard", "/reports/ci.log", env={"SYNCGATE_REPORT_DIR": str(tmp_path),
                                                          **env})
    assert result.returncode == 2
    assert problem in result.stderr
    assert not (tmp_path / CLAIMS).exists()

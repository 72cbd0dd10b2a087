"""`syncgate repro` sharded over N containers of the CPU test image, merged into one verdict.

The suite (tests/data/repro/suite, its CI log tests/data/repro/logs/shard_suite.txt) has one
broken, one 30%-flaky, one order-dependent and one runner-dependent test (it fails where
SUITE_RUNNER_QUIRK is set). Three replicas come from `compose up --scale repro-shard=3`, the
fourth from `compose run -d -e SUITE_RUNNER_QUIRK=1 repro-shard`: the one odd runner. Each claims
its shard index in the shared report dir and writes repro-shard-I-of-4.json there; the merge
(here, on the host, as a CI merge job would) must give exactly the four verdicts.

Then a shard is killed halfway (SIGKILL once its reruns are under way, a pytest process running
in it, and before its file is written): the merge still gives a verdict on what arrived and
names the missing shard.

Needs a Docker engine with the torch wheel server (ci/docker-up.sh; .ci/run starts it when
CI=true) and skips, saying why, without one. The image is the compose `repro` image
(syncgate-cpu-test:local), built once per session on top of the runtime image's layers.
"""

import json
import time
import uuid
from pathlib import Path

import pytest

from vllm_syncgate.cli import main
from vllm_syncgate.containers.gate import CLAIMS

REPO = Path(__file__).resolve().parents[2]
TAG = "syncgate-cpu-test:local"  # compose.yaml's repro and repro-shard image
SERVICE = "repro-shard"
LOG = "/workspace/tests/data/repro/logs/shard_suite.txt"
ARGS = "--rootdir /workspace/tests/data/repro/suite -n 1 --replay-order"
VERDICTS = {
    "case_broken.py::TestAlways::test_broken": "broken",
    "case_flaky.py::test_flaky_third": "flaky",
    "case_order.py::test_victim": "order-dependent",
    "case_runner.py::test_runner_quirk": "environment-dependent",
}

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.needs_docker]


@pytest.fixture(scope="module")
def image(engine, tmp_path_factory):
    log = tmp_path_factory.mktemp("build") / "docker.log"
    build_s = engine.build(REPO, TAG, target="test", log=log)
    print(f"\n{TAG}: build {build_s:.0f} s")
    return TAG


@pytest.fixture
def shard_env(tmp_path):
    """A fresh report dir the replicas (uid 1000) share, and the shard run's settings."""
    reports = tmp_path / "reports"
    reports.mkdir()
    reports.chmod(0o1777)
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o1777)
    return {"SYNCGATE_REPORTS": str(reports), "SYNCGATE_MODEL_CACHE": str(cache),
            "SYNCGATE_UID": "1000", "SYNCGATE_GID": "1000", "SYNCGATE_SHARD_COUNT": "4",
            "SYNCGATE_REPRO_LOG": LOG, "SYNCGATE_REPRO_ARGS": f"{ARGS} --runs 20"}


def _merge(reports: Path, out: Path, capsys) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(["repro", "merge", str(reports), "--report-dir", str(out)])
    text = capsys.readouterr().out
    return code, json.loads((out / "report.json").read_text()), text


def test_four_shards_in_four_containers_merge_into_the_four_verdicts(engine, image, shard_env,
                                                                       tmp_path, capsys):
    log = tmp_path / "compose.log"
    project = f"syncgate-shards-{uuid.uuid4().hex[:8]}"
    reports = Path(shard_env["SYNCGATE_REPORTS"])
    try:
        odd = engine.run_detached(REPO, SERVICE, ["repro-shard", LOG, *ARGS.split(), "--runs",
                                                  "20"],
                                  project=project, env=shard_env,
                                  set_env={"SUITE_RUNNER_QUIRK": "1"}, log=log)
        code, wall_s = engine.up_scaled(REPO, SERVICE, 3, project=project, env=shard_env,
                                        log=log)
        codes = [engine.exit_code(c) for c in engine.containers(project, SERVICE)]
        odd_code = engine.exit_code(odd)
    finally:
        engine.down(REPO, project=project, env=shard_env, log=log)
    output = log.read_text(errors="replace")
    print(f"\n4 shards in 4 containers: {wall_s:.0f} s")
    assert code == 0, output[-4000:]
    assert len(codes) == 4, output[-4000:]  # the three replicas and the odd one
    assert set(codes) == {0}, output[-4000:]
    assert odd_code == 0
    files = sorted(p.name for p in reports.glob("repro-shard-*.json"))
    assert files == [f"repro-shard-{i}-of-4.json" for i in range(1, 5)], output[-4000:]
    hosts = {json.loads((reports / f).read_text())["header"]["host"] for f in files}
    assert len(hosts) == 4, "the shards did not run in four containers"

    code, report, text = _merge(reports, tmp_path / "merged", capsys)
    assert code == 1  # a test is broken
    verdicts = {t["nodeid"]: t["verdict"] for t in report["tests"]}
    assert verdicts == VERDICTS, text
    quirk = next(t for t in report["tests"] if t["nodeid"].endswith("test_runner_quirk"))
    assert quirk["split"]["field"] == "env_set.SUITE_RUNNER_QUIRK"
    assert all(t["runs"] == 20 for t in report["tests"])
    assert report["notes"] == []
    assert engine.containers(project, SERVICE) == []


def test_a_shard_killed_halfway_is_named_and_the_rest_still_judged(engine, image, shard_env,
                                                                    tmp_path, capsys):
    shard_env["SYNCGATE_REPRO_ARGS"] = f"{ARGS} --runs 8"
    log = tmp_path / "compose.log"
    project = f"syncgate-shards-{uuid.uuid4().hex[:8]}"
    reports = Path(shard_env["SYNCGATE_REPORTS"])
    claims = reports / CLAIMS
    try:
        engine.up_scaled(REPO, SERVICE, 4, project=project, env=shard_env, log=log, detach=True)
        victim, host = _first_shard_in_its_reruns(engine, claims, reports)
        engine.kill(host)
        codes = {c[:12]: engine.exit_code(c) for c in engine.containers(project, SERVICE)}
    finally:
        engine.down(REPO, project=project, env=shard_env, log=log)
    output = log.read_text(errors="replace")
    assert codes.pop(host[:12]) == 137  # SIGKILL
    assert set(codes.values()) == {0}, output[-4000:]
    files = sorted(p.name for p in reports.glob("repro-shard-*.json"))
    assert f"repro-shard-{victim}-of-4.json" not in files
    assert len(files) == 3
    assert not list(reports.glob("*.tmp*")), "the killed shard left a half-written file"

    code, report, text = _merge(reports, tmp_path / "merged", capsys)
    assert code == 1  # the broken test is broken on every shard that arrived
    assert f"shard {victim}/4 missing" in text
    assert any(f"{victim}/4" in note for note in report["notes"])
    verdicts = {t["nodeid"]: t["verdict"] for t in report["tests"]}
    assert verdicts["case_broken.py::TestAlways::test_broken"] == "broken"
    assert all(t["runs"] == 6 for t in report["tests"])  # 3 of 4 shards x 2 runs


def _first_shard_in_its_reruns(engine, claims: Path, reports: Path,
                               timeout_s: float = 300) -> tuple[int, str]:
    """A replica mid-run: its index claimed, pytest running in it, its shard file not written.
    Its index and host name (the container's short id, which the claim file holds)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for claim in sorted(claims.glob("[0-9]*")) if claims.exists() else ():
            index, host = int(claim.name), claim.read_text().strip()
            done = (reports / f"repro-shard-{index}-of-4.json").exists()
            if host and not done and "pytest" in engine.processes(host):
                return index, host
        time.sleep(0.2)
    raise AssertionError(f"no replica was in its reruns within {timeout_s:.0f} s")


def test_repro_in_the_running_repro_service_of_the_ci_image(engine, image, shard_env, tmp_path,
                                                            capsys):
    """The documented `docker compose up -d repro && syncgate repro CI.log --in repro`, against
    the image this run built: the reruns happen in the service's container."""
    log = tmp_path / "compose.log"
    project = f"syncgate-repro-{uuid.uuid4().hex[:8]}"
    try:
        code, _ = engine.up_scaled(REPO, "repro", 1, project=project, env=shard_env, log=log,
                                   detach=True)
        assert code == 0, log.read_text(errors="replace")[-3000:]
        capsys.readouterr()
        code = main(["repro", str(REPO / "tests/data/repro/logs/shard_suite.txt"), "--in", "repro",
                     "--workdir", "/workspace/tests/data/repro/suite", "--runs", "4", "-n", "1",
                     "--report-dir", str(tmp_path / "out")])
        text = capsys.readouterr().out
    finally:
        engine.down(REPO, project=project, env=shard_env, log=log)
    assert code == 1, text  # the broken test is broken in the container too
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    verdicts = {t["nodeid"]: t["verdict"] for t in report["tests"]}
    assert verdicts["case_broken.py::TestAlways::test_broken"] == "broken"
    # SUITE_RUNNER_QUIRK is not set in the container: the runner-dependent test passes there
    assert verdicts["case_runner.py::test_runner_quirk"] == "not-reproduced"

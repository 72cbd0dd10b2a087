import os
import sys

import docker
import pytest

from vllm_syncgate.cli import main
from vllm_syncgate.errors import ContainerError
from vllm_syncgate.repro.container import DockerRunner
from vllm_syncgate.repro.logs import parse_log
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome
from vllm_syncgate.repro.reproduce import ReproVerdict, RerunConfig, reproduce


def client_for(engine):
    return docker.DockerClient(base_url=f"unix://{engine.socket_path}", version="1.41")


@pytest.mark.slow
def test_reruns_inside_the_compose_service_through_the_sdk(fake_docker_engine, suite_dir):
    fake_docker_engine.add_container("c0ffee", "e2e-cpu", suite_dir, ["PYTHONPATH=/opt/extra"])
    runner = DockerRunner.connect("e2e-cpu", python=sys.executable,
                                  client=client_for(fake_docker_engine))
    assert runner.description == "container proj-e2e-cpu-1 (compose service e2e-cpu)"
    log = CiLog(source="ci", format="pytest", failures=[
        CiFailure("case_broken.py::TestAlways::test_broken", CiOutcome.FAILED),
        CiFailure("case_flaky.py::test_labels[x - y]", CiOutcome.FAILED),
        CiFailure("case_gone.py::test_x", CiOutcome.FAILED)])
    verdicts = reproduce(log, runner, RerunConfig(runs=3, workers=1))
    assert {v.nodeid: (v.verdict, len(v.runs)) for v in verdicts} == {
        "case_broken.py::TestAlways::test_broken": (ReproVerdict.BROKEN, 3),
        "case_flaky.py::test_labels[x - y]": (ReproVerdict.NOT_REPRODUCED, 3),
        "case_gone.py::test_x": (ReproVerdict.MISSING, 0)}
    commands = [e["spec"]["Cmd"] for e in fake_docker_engine.execs.values()]
    rerun = next(c for c in commands if "syncgate_repro_plugin" in c)
    # argv goes behind sh's "$@", never parsed; since validation folded into the rerun session
    # it holds the validated files, and the node id with spaces travels in the plan only
    assert rerun[:2] == ["sh", "-c"]
    assert {"case_broken.py", "case_flaky.py"} <= set(rerun)
    assert not [a for a in rerun if "::" in a or "x - y" in a]
    env = next(e["spec"]["Env"] for e in fake_docker_engine.execs.values()
               if "syncgate_repro_plugin" in e["spec"]["Cmd"])
    assert any(e.startswith("PYTHONPATH=/tmp/syncgate-repro-") and e.endswith(":/opt/extra")
               for e in env)
    # The staging directory was removed afterwards.
    assert commands[-1][:2] == ["rm", "-rf"]


def test_unknown_service_is_a_one_line_usage_error(fake_docker_engine, suite_dir, monkeypatch,
                                                   capsys, tmp_path):
    fake_docker_engine.add_container("c0ffee", "e2e-cpu", suite_dir)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{fake_docker_engine.socket_path}")
    log = tmp_path / "ci.txt"
    log.write_text("FAILED case_broken.py::TestAlways::test_broken - boom\n")
    assert main(["repro", str(log), "--in", "e2e-gpu"]) == 2
    err = capsys.readouterr().err
    assert "no running compose service and no image of that name" in err
    assert "(running services: e2e-cpu)" in err
    assert err.count("\n") == 1


def test_unreachable_engine_is_a_container_error(tmp_path):
    client = docker.DockerClient(base_url=f"unix://{tmp_path}/none.sock", version="1.41")
    with pytest.raises(ContainerError, match="Docker engine not reachable"):
        DockerRunner.connect("e2e-cpu", client=client)


@pytest.mark.slow
@pytest.mark.needs_docker
def test_real_engine_reruns_in_a_throwaway_container(repro_logs, monkeypatch):
    """Against a real Docker engine, with an image that holds this tree and pytest
    (``SYNCGATE_REPRO_IMAGE``, default the compose test image ``syncgate-cpu-test:local``)."""
    image = os.environ.get("SYNCGATE_REPRO_IMAGE", "syncgate-cpu-test:local")
    workdir = os.environ.get("SYNCGATE_REPRO_WORKDIR", "/workspace/tests/data/repro/suite")
    try:
        client = docker.from_env()
        client.ping()
        client.images.get(image)
    except (docker.errors.DockerException, OSError) as exc:
        pytest.skip(f"no Docker engine with image {image} here: {exc}")
    runner = DockerRunner.connect(image, workdir=workdir, client=client)
    started = runner.container.id
    try:
        log = parse_log(repro_logs / "pytest_quiet.txt")
        keep = {"case_broken.py::TestAlways::test_broken", "case_flaky.py::test_labels[x - y]"}
        log.failures = [f for f in log.failures if f.nodeid in keep]
        verdicts = reproduce(log, runner, RerunConfig(runs=2, workers=1))
    finally:
        runner.close()
    assert {v.nodeid: v.verdict for v in verdicts} == {
        "case_broken.py::TestAlways::test_broken": ReproVerdict.BROKEN,
        "case_flaky.py::test_labels[x - y]": ReproVerdict.NOT_REPRODUCED}
    with pytest.raises(docker.errors.NotFound):  # the throwaway container is gone
        client.containers.get(started)

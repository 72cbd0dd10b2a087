"""The CPU image built and its e2e-cpu service run for real, as CI does on its CPU machines.

Needs a Docker engine (ci/docker-up.sh starts one, makes the base image and serves the torch
wheel; .ci/run does that when CI=true) and skips with the reason otherwise. It builds
docker/Dockerfile.cpu with host networking, runs `compose up --exit-code-from e2e-cpu` as a
non-root user into a scratch reports dir, reads the report the gate wrote, and removes the
project's containers, network and volumes whatever happens.
"""

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from syncgate.containers.engine import Engine
from syncgate.errors import EnvironmentProblem
from syncgate.repro.envheader import parse_env_header

REPO = Path(__file__).resolve().parents[2]
TAG = "syncgate-cpu:local"  # compose.yaml's e2e-cpu image

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.needs_docker]


@pytest.fixture(scope="module")
def engine():
    try:
        found = Engine.find()
    except EnvironmentProblem as exc:
        pytest.skip(f"no container run: {exc}")
    if "SYNCGATE_WHEELS_URL" not in found.build_env:
        pytest.skip("no torch wheel server for the build (run ci/docker-up.sh)")
    return found


def _shared_dir(path: Path) -> Path:
    # The container runs as uid 1000, not as the test's user: let it write here.
    path.mkdir()
    path.chmod(0o1777)
    return path


def test_cpu_image_builds_and_e2e_cpu_passes(engine, tmp_path):
    log = tmp_path / "docker.log"
    build_s = engine.build(REPO, TAG, log=log)
    size = engine.image_size(TAG)
    reports = _shared_dir(tmp_path / "reports")
    env = {"SYNCGATE_REPORTS": str(reports),
           "SYNCGATE_MODEL_CACHE": str(_shared_dir(tmp_path / "cache")),
           "SYNCGATE_UID": "1000", "SYNCGATE_GID": "1000"}
    project = f"syncgate-e2e-{uuid.uuid4().hex[:8]}"
    try:
        code, run_s = engine.up(REPO, "e2e-cpu", project=project, env=env, log=log)
    finally:
        engine.down(REPO, project=project, env=env, log=log)
    output = log.read_text(errors="replace")
    print(f"\nCPU image: build {build_s:.0f} s, {size / 2**30:.2f} GiB; e2e-cpu run {run_s:.0f} s")
    assert code == 0, output[-4000:]
    assert size < 4 * 2**30
    headers = [h for h in map(parse_env_header, output.splitlines()) if h]
    assert headers, "the gate printed no environment header"
    assert headers[0]["device"] == "cpu"
    assert headers[0]["vllm"] == "0.32.0"
    report = json.loads((reports / "report.json").read_text())
    assert report["passed"] is True
    assert (reports / "junit.xml").exists()
    assert all(p.stat().st_uid == 1000 for p in reports.iterdir()), "not written as non-root"
    left = subprocess.run([engine.docker, "ps", "-a", "--filter", f"name={project}", "-q"],
                          capture_output=True, text=True, check=True).stdout
    assert left == "", "the project's containers were not removed"

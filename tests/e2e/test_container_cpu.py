"""The CPU image built and its e2e-cpu service run for real, as CI does on its CPU machines.

Needs a Docker engine (ci/docker-up.sh starts one, makes the base image and serves the torch
wheel; .ci/run does that when CI=true) and skips with the reason otherwise. The image is built
once per session with host networking; every run uses the e2e-cpu service definition as
compose.yaml has it (non-root, offline, reports on a bind mount) and removes the project's
containers, network and volumes whatever happens.

Two runs: `up --exit-code-from e2e-cpu` into a report dir the container may not write, which must
fail with the gate's exit code (so a failing gate fails CI); then the gate with two scenarios
(`compose run e2e-cpu check --scenarios ...`: one server instead of three, to fit CI's budget;
the full scenario set runs at serve level in tests/e2e), which must pass and leave its report.
"""

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from vllm_syncgate.environment import parse_header

REPO = Path(__file__).resolve().parents[2]
TAG = "syncgate-cpu:local"  # compose.yaml's e2e-cpu image
SCENARIOS = ("sequential", "batched")

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.needs_docker]


@pytest.fixture(scope="module")
def image(engine, tmp_path_factory):
    log = tmp_path_factory.mktemp("build") / "docker.log"
    build_s = engine.build(REPO, TAG, log=log)
    size = engine.image_size(TAG)
    print(f"\nCPU image {TAG}: build {build_s:.0f} s, {size / 2**30:.2f} GiB")
    return size


@pytest.fixture
def compose_env(tmp_path):
    """Scratch reports and model cache the container (uid 1000) may write."""
    dirs = {}
    for name in ("reports", "cache"):
        dirs[name] = tmp_path / name
        dirs[name].mkdir()
        dirs[name].chmod(0o1777)
    return {"SYNCGATE_REPORTS": str(dirs["reports"]), "SYNCGATE_MODEL_CACHE": str(dirs["cache"]),
            "SYNCGATE_UID": "1000", "SYNCGATE_GID": "1000"}


def _left_over(engine, project):
    return subprocess.run([engine.docker, "ps", "-a", "--filter", f"name={project}", "-q"],
                          capture_output=True, text=True, check=True).stdout


def test_image_is_under_4_gib(image):
    assert image < 4 * 2**30


def test_a_failing_gate_fails_compose_up(engine, image, compose_env, tmp_path):
    Path(compose_env["SYNCGATE_REPORTS"]).chmod(0o755)  # owned by us, not by uid 1000
    log = tmp_path / "up.log"
    project = f"syncgate-e2e-{uuid.uuid4().hex[:8]}"
    try:
        code, _ = engine.up(REPO, "e2e-cpu", project=project, env=compose_env, log=log,
                            timeout_s=300)
    finally:
        engine.down(REPO, project=project, env=compose_env, log=log)
    output = log.read_text(errors="replace")
    assert code == 2, output[-3000:]
    assert "syncgate check: error: " in output
    assert _left_over(engine, project) == ""


def test_e2e_cpu_gate_passes_and_writes_its_report(engine, image, compose_env, tmp_path):
    log = tmp_path / "run.log"
    project = f"syncgate-e2e-{uuid.uuid4().hex[:8]}"
    try:
        code, run_s = engine.run(REPO, "e2e-cpu", ["check", "--scenarios", *SCENARIOS],
                                 project=project, env=compose_env, log=log)
    finally:
        engine.down(REPO, project=project, env=compose_env, log=log)
    output = log.read_text(errors="replace")
    print(f"\ne2e-cpu gate ({', '.join(SCENARIOS)}): {run_s:.0f} s")
    assert code == 0, output[-4000:]
    headers = [h for h in map(parse_header, output.splitlines()) if h]
    assert headers, "the gate printed no environment header"
    assert headers[0]["device"] == "cpu"
    assert headers[0]["vllm"] == "0.32.0"
    reports = Path(compose_env["SYNCGATE_REPORTS"])
    report = json.loads((reports / "report.json").read_text())
    assert report["passed"] is True
    # the whole chain in the image: source scan, unit probes on its vLLM, the served model
    assert {k: v["status"] for k, v in report["levels"].items()} == {
        "scan": "pass", "unit": "pass", "serve": "pass"}
    assert (reports / "junit.xml").exists()
    assert (reports / "report.json").stat().st_uid == 1000, "not written as the non-root user"
    assert _left_over(engine, project) == ""

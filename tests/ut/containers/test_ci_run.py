""".ci/run under CI=true: no Docker engine is a failed CI, not a green one with skipped tests.

The script runs in a scratch copy of the tree layout with stand-ins for ci/docker-up.sh,
ci/docker-down.sh and scripts/setup-env.sh that record they ran, so what is checked is .ci/run's
own control flow.
"""

import shutil
import subprocess

import pytest


@pytest.fixture
def tree(repo, tmp_path):
    (tmp_path / ".ci").mkdir()
    shutil.copy(repo / ".ci/run", tmp_path / ".ci/run")
    for name in ("ci/docker-up.sh", "ci/docker-down.sh", "scripts/setup-env.sh"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(f'echo {name} >> "$(dirname "$0")/../ran"\n'
                                     'exit "${STAND_IN_EXIT:-0}"\n')
    return tmp_path


def _run(tree, **env):
    return subprocess.run(["bash", str(tree / ".ci/run")], capture_output=True, text=True,
                          timeout=60, check=False, env={"PATH": "/usr/bin:/bin", **env})


def test_ci_fails_when_the_engine_cannot_start(tree):
    result = _run(tree, CI="true", STAND_IN_EXIT="2")
    assert result.returncode == 2
    assert "could not start the Docker engine" in result.stderr
    # nothing was tested; the engine's leftovers were still cleaned up
    assert (tree / "ran").read_text().split() == ["ci/docker-up.sh", "ci/docker-down.sh"]


def test_ci_with_an_engine_goes_on_to_the_tests(tree):
    result = _run(tree, CI="true")
    assert (tree / "ran").read_text().split()[:2] == ["ci/docker-up.sh", "scripts/setup-env.sh"]
    assert "could not start" not in result.stderr


def test_outside_ci_no_engine_is_started(tree):
    _run(tree)
    assert (tree / "ran").read_text().split()[0] == "scripts/setup-env.sh"

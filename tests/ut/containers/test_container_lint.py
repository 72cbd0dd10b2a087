"""Offline validation: hadolint, the compose schema, the workflow schema and actionlint.

Each validator passes on the real file and fails on a broken copy, so a green run means the
files were checked, not that the checker was inert.
"""

import re

import pytest
import yaml

DOCKERFILES = ("docker/Dockerfile.cpu", "Dockerfile.cuda", "Dockerfile.npu")


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_dockerfile_lints_clean(run_tool, dockerfile):
    result = run_tool("hadolint", "--no-color", dockerfile)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_rejects_an_unpinned_apt_install(run_tool, repo, tmp_path):
    text = (repo / "docker/Dockerfile.cpu").read_text()
    broken = tmp_path / "Dockerfile"
    broken.write_text(text.replace("libnuma1=2.0.16-1", "libnuma1", 1))
    result = run_tool("hadolint", "--no-color", str(broken))
    assert result.returncode != 0
    assert "DL3008" in result.stdout


def test_hadolint_config_ignores_nothing(repo):
    # A blanket ignore list would make the lint above pass vacuously.
    config = yaml.safe_load((repo / ".hadolint.yaml").read_text())
    assert not config.get("ignored")
    assert config["failure-threshold"] == "info"


def test_compose_file_matches_the_compose_spec(run_tool):
    result = run_tool("check-jsonschema", "--builtin-schema", "vendor.compose-spec", "compose.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("good", "bad"), [
    ("capabilities: [gpu]", "countt: 1\n              capabilities: [gpu]"),
    ("    ipc: host", "    ipx: host"),
])
def test_compose_schema_rejects_a_typo(run_tool, repo, tmp_path, good, bad):
    text = (repo / "compose.yaml").read_text()
    assert good in text
    broken = tmp_path / "compose.yaml"
    broken.write_text(text.replace(good, bad, 1))
    result = run_tool("check-jsonschema", "--builtin-schema", "vendor.compose-spec", str(broken))
    assert result.returncode != 0
    assert re.search(r"countt|ipx", result.stdout + result.stderr)


def _workflows(repo):
    found = sorted(str(p.relative_to(repo)) for p in (repo / ".github/workflows").glob("*.yml"))
    assert found, "no workflows"
    return found


def test_workflows_match_the_workflow_schema(run_tool, repo):
    result = run_tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows",
                      *_workflows(repo))
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflows_pass_actionlint(run_tool, repo):
    result = run_tool("actionlint", "-no-color", *_workflows(repo))
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflow_validators_reject_a_bad_key(run_tool, repo, tmp_path):
    text = (repo / ".github/workflows/gate-cpu.yml").read_text()
    broken = tmp_path / "gate-cpu.yml"
    broken.write_text(text.replace("    timeout-minutes: 15", "    timeout-minutez: 15", 1))
    schema = run_tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows",
                      str(broken))
    lint = run_tool("actionlint", "-no-color", str(broken))
    assert schema.returncode != 0
    assert lint.returncode != 0
    assert "timeout-minutez" in lint.stdout


def test_actionlint_catches_an_undefined_input(run_tool, repo, tmp_path):
    # Beyond the schema: expressions are type-checked against the declared inputs.
    text = (repo / ".github/workflows/gate-npu.yml").read_text()
    broken = tmp_path / "gate-npu.yml"
    broken.write_text(text.replace("inputs.vllm-ascend-ref }}", "inputs.vllm-ascend-rev }}", 1))
    assert run_tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows",
                    str(broken)).returncode == 0
    lint = run_tool("actionlint", "-no-color", str(broken))
    assert lint.returncode != 0
    assert "vllm-ascend-rev" in lint.stdout


SCRIPTS = ("ci/docker-up.sh", "ci/apt-sources.sh", "ci/docker-down.sh", "ci/gate.sh", "docker/npu-entrypoint.sh",
           "docker/fetch-ref.sh", ".ci/run")


def test_shell_scripts_pass_shellcheck(run_tool):
    result = run_tool("shellcheck", *SCRIPTS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_shellcheck_rejects_an_unquoted_state_path(run_tool, repo, tmp_path):
    text = (repo / "ci/docker-down.sh").read_text()
    broken = tmp_path / "docker-down.sh"
    broken.write_text(text.replace('rm -f "$pidfile"', "rm -f $pidfile", 1))
    result = run_tool("shellcheck", str(broken))
    assert result.returncode != 0
    assert "SC2086" in result.stdout

"""The fan-out pipelines syncgate ships, validated offline with their platforms' schemas.

- .github/workflows/repro.yml: actionlint and the GitHub workflow schema (the glob in
  test_container_lint covers it too; here a broken copy shows the matrix wiring is checked);
- ci/github/check-fanout.yml (the gate fanned out over a matrix, for users to copy): the same,
  and every syncgate command line in it parses with this CLI;
- ci/buildkite/repro.yml: check-jsonschema's Buildkite schema;
- ci/k8s/*.yaml: the Kubernetes Job schema that kubernetes-validate ships (lint extra), bundled
  with its definitions into one file, since its references are absolute paths on kubernetes.io
  that an offline validator cannot fetch.

Each validator also rejects a broken copy, so a pass means the file was checked.
"""

import json
from pathlib import Path

import pytest
import yaml

WORKFLOW = ".github/workflows/repro.yml"
FANOUT = "ci/github/check-fanout.yml"
BUILDKITE = "ci/buildkite/repro.yml"
K8S = ("ci/k8s/repro-shards.yaml", "ci/k8s/repro-merge.yaml")
K8S_VERSION = "v1.33.0-local-strict"  # backoffLimitPerIndex is GA from 1.33


@pytest.fixture(scope="module")
def job_schema(tmp_path_factory) -> Path:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    folder = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / K8S_VERSION
    job = json.loads((folder / "job-batch-v1.json").read_text(encoding="utf-8"))
    defs = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    text = json.dumps({**job, "$defs": defs}).replace('"/api/_definitions.json#/$defs/',
                                                      '"#/$defs/')
    assert "_definitions.json" not in text
    path = tmp_path_factory.mktemp("k8s") / "job-batch-v1.json"
    path.write_text(text, encoding="utf-8")
    return path


def _broken(repo, tmp_path, name, good, bad):
    text = (repo / name).read_text(encoding="utf-8")
    assert good in text
    path = tmp_path / Path(name).name
    path.write_text(text.replace(good, bad, 1), encoding="utf-8")
    return str(path)


def test_repro_workflow_passes_actionlint_and_the_schema(run_tool):
    assert run_tool("actionlint", "-no-color", WORKFLOW).returncode == 0
    schema = run_tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows", WORKFLOW)
    assert schema.returncode == 0, schema.stdout + schema.stderr


def test_fanout_workflow_passes_actionlint_and_the_schema(run_tool):
    lint = run_tool("actionlint", "-no-color", FANOUT)
    assert lint.returncode == 0, lint.stdout
    schema = run_tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows", FANOUT)
    assert schema.returncode == 0, schema.stdout + schema.stderr


def test_fanout_workflow_runs_real_commands_on_the_profile_s_groups(repo):
    from vllm_syncgate.cli import build_parser
    from vllm_syncgate.profiles import builtin_profile_path, load_profile

    doc = yaml.safe_load((repo / FANOUT).read_text(encoding="utf-8"))
    matrix = doc["jobs"]["check"]["strategy"]["matrix"]["group"]
    assert matrix == [g.name for g in load_profile(builtin_profile_path("npu")).groups]
    runs = [step["run"] for job in doc["jobs"].values() for step in job["steps"] if "run" in step]
    lines = [r.replace("${{ matrix.group }}", matrix[0]).replace('"', "")
             for r in runs if r.startswith("syncgate ")]
    parsed = [build_parser().parse_args(line.split()[1:]) for line in lines]
    assert [(a.command, getattr(a, "action", None)) for a in parsed] == [
        ("check", None), ("check", "merge"), ("annotate", None)]
    assert parsed[0].groups == matrix[0]


def test_repro_workflow_shape(repo):
    doc = yaml.safe_load((repo / WORKFLOW).read_text(encoding="utf-8"))
    triggers = doc[True]  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"issue_comment", "workflow_run", "workflow_dispatch"}
    shard, merge = doc["jobs"]["shard"], doc["jobs"]["merge"]
    assert shard["strategy"]["fail-fast"] is False
    assert shard["env"]["SYNCGATE_SHARD"] == "${{ matrix.shard }}/${{ strategy.job-total }}"
    assert merge["needs"] == ["log", "shard"]
    assert merge["if"].startswith("always()")  # a dead shard must not cancel the verdict


def test_actionlint_catches_a_miswired_matrix(run_tool, repo, tmp_path):
    broken = _broken(repo, tmp_path, WORKFLOW, "needs.log.outputs.shards)",
                     "needs.log.outputs.shard)")
    lint = run_tool("actionlint", "-no-color", broken)
    assert lint.returncode != 0
    assert "shard" in lint.stdout


def test_buildkite_pipeline_matches_its_schema(run_tool, repo, tmp_path):
    good = run_tool("check-jsonschema", "--builtin-schema", "vendor.buildkite", BUILDKITE)
    assert good.returncode == 0, good.stdout + good.stderr
    broken = _broken(repo, tmp_path, BUILDKITE, "parallelism: 4", "parallelism: four")
    bad = run_tool("check-jsonschema", "--builtin-schema", "vendor.buildkite", broken)
    assert bad.returncode != 0
    assert "four" in bad.stdout


def test_buildkite_shards_and_merge_agree(repo):
    steps = yaml.safe_load((repo / BUILDKITE).read_text(encoding="utf-8"))["steps"]
    shards, merge = steps
    assert shards["parallelism"] > 1
    assert "--shard auto" in " ".join(shards["command"])
    assert merge["depends_on"][0]["step"] == shards["key"]
    assert merge["allow_dependency_failure"] is True


def test_kubernetes_manifests_match_the_job_schema(run_tool, job_schema):
    result = run_tool("check-jsonschema", "--schemafile", str(job_schema), *K8S)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_job_schema_rejects_a_misspelt_field(run_tool, repo, tmp_path, job_schema):
    broken = _broken(repo, tmp_path, K8S[0], "\n  backoffLimitPerIndex:", "\n  backoffLimitPerIndx:")
    result = run_tool("check-jsonschema", "--schemafile", str(job_schema), broken)
    assert result.returncode != 0
    assert "backoffLimitPerIndx" in result.stdout


def test_indexed_job_counts_agree(repo):
    job = yaml.safe_load((repo / K8S[0]).read_text(encoding="utf-8"))
    spec = job["spec"]
    [container] = spec["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == int(env["SYNCGATE_SHARD_COUNT"])
    assert container["args"][container["args"].index("--shard") + 1] == "auto"

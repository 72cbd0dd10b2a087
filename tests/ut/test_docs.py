"""The docs a user copies from: the workflow snippet passes actionlint and parses with this CLI,
the pre-commit hook runs the real scan (the report.json glossary: tests/ut/check)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _workflow_block() -> str:
    text = (REPO / "docs" / "ci.md").read_text()
    after = text.split("<!-- workflow: syncgate.yml", 1)[1]
    return re.search(r"```yaml\n(.*?)```", after, re.S).group(1)


def _actionlint(tmp_path: Path, workflow: str) -> subprocess.CompletedProcess:
    tool = BIN / "actionlint"
    if not tool.exists() and shutil.which("actionlint") is None:
        pytest.skip("actionlint is not installed (pip install -e '.[lint]')")
    target = tmp_path / ".github" / "workflows" / "syncgate.yml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(workflow)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    return subprocess.run([str(tool) if tool.exists() else "actionlint", "-no-color", str(target)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)


def test_workflow_snippet_passes_actionlint(tmp_path):
    done = _actionlint(tmp_path, _workflow_block())
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_broken_snippet(tmp_path):
    broken = _workflow_block().replace("if: failure()", "if: ${{ falure() }}")
    assert broken != _workflow_block()
    done = _actionlint(tmp_path, broken)
    assert done.returncode != 0
    assert "falure" in done.stdout


def test_workflow_snippet_uses_real_subcommands_and_flags():
    """Every syncgate command line of the snippet parses with this CLI."""
    from vllm_syncgate.cli import build_parser

    doc = yaml.safe_load(_workflow_block())
    runs = [step["run"] for job in doc["jobs"].values() for step in job["steps"] if "run" in step]
    lines = [r for r in runs if r.startswith("syncgate ")]
    assert {line.split()[1] for line in lines} >= {"scan", "check", "annotate"}
    for line in lines:
        args = line.split()[1:]
        build_parser().parse_args(args)


def test_precommit_hook_runs_the_real_scan(data_dir, tmp_path):
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert {"id", "name", "entry", "language"} <= set(hook)  # pre-commit's required manifest keys
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False
    assert re.search(hook["files"], "vllm/v1/worker/gpu_model_runner.py")
    assert not re.search(hook["files"], "vllm/entrypoints/openai/api_server.py")
    program, *entry_args = hook["entry"].split()
    assert program == "vllm-syncgate"  # the console script no other distribution installs
    tree = tmp_path / "vllm" / "v1" / "worker"
    shutil.copytree(data_dir / "scan" / "rules", tree)
    done = subprocess.run([str(BIN / program), *entry_args, *hook["args"]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 1, done.stderr  # the fixture has failing syncs: the hook fails
    assert "blocking_readback" in done.stdout


TWO_COMMANDS = """```bash
# 1. create the environment from nothing and run the main job (the embedded CPU default)
bash scripts/setup-env.sh && .venv/bin/syncgate check

# 2. create the environment from nothing and run the tests
bash scripts/setup-env.sh && .venv/bin/python -m pytest
```"""


def _section(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(heading)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    return [line for line in lines[start:end]]


def test_readme_starts_with_the_five_minute_path():
    readme = (REPO / "README.md").read_text()
    first = next(line for line in readme.splitlines() if line.startswith("## "))
    top = _section(readme, first)
    while top and not top[-1].strip():
        top.pop()
    assert len(top) <= 15, "\n".join(top)
    text = "\n".join(top)
    assert re.search(r"^pip install ", text, re.M)
    assert re.search(r"^syncgate scan ", text, re.M)
    assert re.search(r"^syncgate check", text, re.M)
    assert "  fix: " in text  # what a failure looks like, and its fix


def test_readme_keeps_the_two_setup_commands_verbatim():
    assert TWO_COMMANDS in (REPO / "README.md").read_text()


def test_every_relative_link_of_the_docs_resolves():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    assert len(pages) >= 9
    for page in pages:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name}: {target}"

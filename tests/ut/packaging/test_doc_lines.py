"""Every install and run line in README.md, docs/*.md and the workflows works when pasted (issue 23).

The lines are those of fenced code blocks (a YAML ``run:`` step included), and of the workflow
files (``.github/workflows``, ``ci/github``: read whole, as one block), that start with pip
(``pip``, ``python -m pip``) or syncgate (``syncgate``, ``vllm-syncgate``, ``python -m
vllm_syncgate``). An install line must name only this project (``vllm-syncgate``, with extras)
and is run in a throwaway venv against the built wheel with ``--no-index --find-links``; a local
path in it (``-e .``: the reader's own vLLM tree) is left out. A run line must parse with the real
``syncgate`` parser (a synopsis ``[...]`` ends what is parsed). The pre-commit ``rev`` must be a
commit of this repository whose hooks file has the hook.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging_venvs import REPO, new_venv, pip, run

from vllm_syncgate import __version__
from vllm_syncgate.cli import build_parser

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
WORKFLOWS = [*sorted((REPO / ".github" / "workflows").glob("*.yml")), *sorted((REPO / "ci" / "github").glob("*.yml"))]
FENCE = re.compile(r"^\s*(```|~~~)")
PIP = re.compile(r"^(\S*/)?(pip3?|python3?(\.\d+)? -m pip) install\b")
SYNCGATE = re.compile(r"^(\S*/)?(syncgate|vllm-syncgate|python3?(\.\d+)? -m vllm_syncgate)\b")
OPERATORS = {"&&", "||", ";", "|"}
OURS = "vllm-syncgate"


def doc_commands(text: str) -> list[tuple[int, str]]:
    """``(line number, command)`` for each pip-install or syncgate command in fenced blocks."""
    found, fenced, pending, start = [], False, "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if FENCE.match(raw):
            fenced, pending = not fenced, ""
            continue
        if not fenced:
            continue
        line = raw.strip()
        if not pending:
            start = number
            line = re.sub(r"^(-\s+)?(run:\s+|\$\s+)", "", line)
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            continue  # not shell (Python, TOML, prose in a block)
        segment: list[str] = []
        for token in [*tokens, ";"]:
            if token not in OPERATORS:
                segment.append(token)
                continue
            command = shlex.join(segment)
            if PIP.match(command) or SYNCGATE.match(command):
                found.append((start, command))
            segment = []
    return found


def install_requirements(command: str) -> tuple[list[str], list[str]]:
    """(requirements, problems) of a pip install line: names other than this project's are problems."""
    tokens = shlex.split(command)
    args = tokens[tokens.index("install") + 1:]
    requirements, problems, skip = [], [], False
    for token in args:
        if skip:
            skip = False
        elif token in ("-e", "--editable", "-c", "--constraint", "-r", "--requirement", "-f",
                       "--find-links", "-i", "--index-url", "--extra-index-url", "-t", "--target"):
            skip = True  # its value: a path (-e .), a file or an index, not a name
        elif token.startswith("-"):
            continue
        elif token.startswith((".", "/", "~")):
            continue  # a local path: the reader's own tree
        else:
            try:
                name = Requirement(token).name
            except InvalidRequirement:
                problems.append(f"{token!r} is not a requirement")
                continue
            if re.sub(r"[-_.]+", "-", name).lower() != OURS:
                problems.append(f"{name!r} is not this project ({OURS})")
            requirements.append(token)
    return requirements, problems


def install_in_throwaway_venv(requirements: list[str], venv: Path, *find_links: Path) -> None:
    """Install ``requirements`` into a new venv from the built wheel and wheelhouse only."""
    python = new_venv(venv)
    pip(python, "install", "-q", "--no-compile", *(f"--find-links={p}" for p in find_links), *requirements)
    version = run([python.parent / "vllm-syncgate", "-V"]).stdout
    assert version.startswith("vllm-syncgate "), version


def parse_problem(command: str) -> str | None:
    """Why the real parser refuses a syncgate run line, or ``None``."""
    tokens = shlex.split(command)
    argv = tokens[3:] if tokens[1:3] == ["-m", "vllm_syncgate"] else tokens[1:]
    if any(t.startswith("[") for t in argv):
        argv = argv[:next(i for i, t in enumerate(argv) if t.startswith("["))]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(argv)
    except SystemExit as exit_:
        return None if exit_.code == 0 else err.getvalue().strip() or f"exit {exit_.code}"
    return None


def all_commands() -> list[tuple[str, str]]:
    found = [(f"{doc.relative_to(REPO)}:{number}", command)
             for doc in DOCS for number, command in doc_commands(doc.read_text(encoding="utf-8"))]
    for workflow in WORKFLOWS:
        block = "```\n" + workflow.read_text(encoding="utf-8") + "\n```\n"
        found += [(f"{workflow.relative_to(REPO)}:{number - 1}", command)
                  for number, command in doc_commands(block)]
    return found


def test_the_docs_have_install_and_run_lines_and_every_install_names_this_project():
    commands = all_commands()
    installs = [(where, c) for where, c in commands if PIP.match(c)]
    assert len(installs) >= 3, installs  # README, docs/setup.md, docs/ci.md at least
    assert any(SYNCGATE.match(c) for _, c in commands)
    problems = [f"{where}: {p}" for where, c in installs for p in install_requirements(c)[1]]
    assert problems == []


def test_every_syncgate_line_parses():
    problems = [f"{where}: {command}: {why}" for where, command in all_commands()
                if SYNCGATE.match(command) and (why := parse_problem(command))]
    assert problems == []


@pytest.mark.slow
def test_every_install_line_installs_this_project_from_the_built_wheel(wheel, wheelhouse, tmp_path):
    distinct = sorted({tuple(install_requirements(c)[0]) for _, c in all_commands() if PIP.match(c)})
    for number, requirements in enumerate(r for r in distinct if r):
        install_in_throwaway_venv(list(requirements), tmp_path / f"venv{number}", wheel.parent, wheelhouse)


PLANTED = """Install:
```bash
pip install syncgate  # the name the README once had
syncgate scann vllm/v1/worker
```
"""


def test_a_planted_wrong_name_and_subcommand_are_caught():
    (_, install), (_, scan) = doc_commands(PLANTED)
    assert install_requirements(install) == (["syncgate"], ["'syncgate' is not this project (vllm-syncgate)"])
    assert "invalid choice: 'scann'" in parse_problem(scan)


@pytest.mark.slow
def test_a_planted_wrong_name_does_not_install(wheel, wheelhouse, tmp_path):
    with pytest.raises(AssertionError, match="No matching distribution found for syncgate"):
        install_in_throwaway_venv(["syncgate"], tmp_path / "venv", wheel.parent, wheelhouse)


def test_the_pre_commit_rev_is_a_commit_with_the_hook():
    shallow = run(["git", "-C", REPO, "rev-parse", "--is-shallow-repository"]).stdout.strip()
    if shallow == "true":
        pytest.skip("a shallow clone does not hold the pinned commit")
    (rev,) = re.findall(r"^\s*rev:\s*(\S+)", (REPO / "docs" / "ci.md").read_text(), re.M)
    hooks = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:.pre-commit-hooks.yaml"],
                           capture_output=True, text=True)
    assert hooks.returncode == 0, f"rev {rev}: {hooks.stderr.strip()}"
    assert "- id: syncgate-scan" in hooks.stdout
    assert "entry: vllm-syncgate scan" in hooks.stdout


def changelog_version(text: str) -> str | None:
    """The version in the newest ``## ... (VERSION)`` heading of a changelog."""
    heading = re.search(r"^## .*\((\d+\.\d+\.\d+[^)\s]*)\)\s*$", text, re.M)
    return heading.group(1) if heading else None


def test_the_changelog_heads_with_the_one_version():
    """CHANGELOG.md's newest entry is the version the build, -V and reports use."""
    assert changelog_version((REPO / "CHANGELOG.md").read_text()) == __version__
    assert changelog_version("# Changelog\n\n## Unreleased (9.9.9)\n\n## 0.1.0 (0.1.0)\n") == "9.9.9"

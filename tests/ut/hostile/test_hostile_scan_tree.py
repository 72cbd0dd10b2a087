"""Hostile trees against the scan's verdict (issue 24 items 1, 2, 5), as an attacker who controls
a pull request's files would write them:

- nothing hidden: a file the scan cannot read or parse is named in every verdict and fails the
  gate (``check``, ``scan --strict``) unless excluded with a reason;
- lines as Python sees them: a character ``str.splitlines()`` breaks at cannot move an allow
  comment onto the sync below it, and allow text in a string literal allows nothing;
- a tree's settings stay in the tree: no search above its root, no path out of it, nothing read
  outside echoed, and the settings in force printed with every verdict.

Each probe failed on the base commit 4fa528f (run there with PYTHONPATH=<base>/src).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

CLEAN = ("import torch\n\n\nclass GPUModelRunner:\n    def execute_model(self):\n"
         "        return self._forward()\n\n    def _forward(self):\n        return None\n")
SYNCING = ("import torch\n\n\nclass GPUModelRunner:\n    def execute_model(self):\n"
           "        torch.cuda.synchronize()\n")
ALLOWING_BUDGET = ('extends = "cuda"\n[[budget]]\nspeculation = false\n[[budget.allow]]\n'
                   'site = "*:GPUModelRunner.execute_model"\nkind = "device_sync"\nreason = "x"\n')


def vllm_tree(root: Path, runner: str = CLEAN) -> Path:
    """A vLLM-shaped checkout at ``root`` (with .git); its worker folder is returned."""
    worker = root / "vllm" / "v1" / "worker"
    worker.mkdir(parents=True)
    (root / ".git").mkdir()
    for folder in (root / "vllm", root / "vllm" / "v1", worker):
        (folder / "__init__.py").write_text("")
    (worker / "gpu_model_runner.py").write_text(runner)
    return worker


def plain_tree(root: Path, runner: str = SYNCING) -> Path:
    root.mkdir(parents=True)
    (root / "runner.py").write_text(runner)
    return root


def verdict(outcome, code: int, pattern: str | None = None) -> str:
    """Assert the exit code and no traceback; the whole output, for more checks."""
    text = outcome.stdout + outcome.stderr
    assert "Traceback" not in text, text[-3000:]
    assert outcome.code == code, f"exit {outcome.code}, expected {code}: {text[-2000:]}"
    if pattern is not None:
        assert re.search(pattern, text), (pattern, text[-2000:])
    return text


# --- 1. nothing hidden ---------------------------------------------------------------------------
def _huge(folder: Path) -> str:
    (folder / "huge.py").write_text("y = 1\n" * 600_000)  # over the 2 MiB default
    return "huge.py"


def _syntax(folder: Path) -> str:
    (folder / "broken.py").write_text("def step(:\n    torch.cuda.synchronize()\n")
    return "broken.py"


def _not_utf8(folder: Path) -> str:
    (folder / "latin.py").write_bytes(b"x = '\xff'\ntorch.cuda.synchronize()\n")
    return "latin.py"


def _deep(folder: Path) -> str:
    (folder / "deep.py").write_text("x = " + "+".join(["a"] * 300) + "\n")
    return "deep.py"


UNREAD = [("over-size", _huge), ("syntax-error", _syntax), ("not-utf8", _not_utf8),
          ("over-depth", _deep)]


def check_scan(sandbox, tree: Path, *extra: str):
    reports = sandbox.tmp / "reports"
    outcome = sandbox.run(["check", "--source", str(tree), "--levels", "scan", "--device", "cpu",
                           "--report-dir", str(reports), *extra], timeout=180)
    return outcome, reports


@pytest.mark.parametrize("make", [u[1] for u in UNREAD], ids=[u[0] for u in UNREAD])
def test_check_fails_on_an_unread_runner_file_and_names_it_everywhere(sandbox, make):
    worker = vllm_tree(sandbox.work / "tree")
    name = make(worker)
    outcome, reports = check_scan(sandbox, sandbox.work / "tree")
    verdict(outcome, 1, rf"not read: \S*{re.escape(name)}")
    doc = json.loads((reports / "report.json").read_text())
    cases = doc["levels"]["scan"]["cases"]
    assert any(c["name"].endswith(name) and not c["passed"] and c.get("error") for c in cases)
    junit = (reports / "junit.xml").read_text()
    assert re.search(rf'<testcase [^>]*name="not read: [^"]*{re.escape(name)}"[^>]*>\s*<error', junit)


def test_check_passes_an_unread_file_excluded_with_a_reason_and_says_so(sandbox):
    worker = vllm_tree(sandbox.work / "tree")
    _huge(worker)
    (sandbox.work / "tree" / "pyproject.toml").write_text(
        '[tool.syncgate]\nexclude = [{path = "vllm/v1/worker/huge.py", reason = "generated table"}]\n')
    outcome, _ = check_scan(sandbox, sandbox.work / "tree")
    verdict(outcome, 0, r"excluded: \S*huge\.py: .*\(excluded: generated table\)")


def test_scan_strict_fails_on_an_unread_file(sandbox):
    tree = plain_tree(sandbox.work / "src", CLEAN)
    _syntax(tree)
    verdict(sandbox.run(["scan", "src", "--strict"]), 1, r"FAIL: not read: src/broken\.py")


def test_scan_strict_passes_a_file_excluded_by_the_budget_with_a_reason(sandbox):
    tree = plain_tree(sandbox.work / "src", CLEAN)
    _huge(tree)
    (sandbox.work / "b.toml").write_text(
        'extends = "cuda"\n[[exclude]]\npath = "src/huge.py"\nreason = "generated table"\n')
    verdict(sandbox.run(["scan", "src", "--strict", "--budget", "b.toml"]), 0,
            r"excluded: src/huge\.py")


def test_scan_json_lists_every_unread_file(sandbox):
    tree = plain_tree(sandbox.work / "src")
    _huge(tree)
    outcome = sandbox.run(["scan", "src", "--format", "json"])
    verdict(outcome, 1)
    doc = json.loads(outcome.stdout)
    assert [u["file"] for u in doc["unread"]] == ["src/huge.py"]


def test_scan_text_verdict_names_a_skipped_file(sandbox):
    tree = plain_tree(sandbox.work / "src")
    _huge(tree)
    outcome = sandbox.run(["scan", "src"])
    verdict(outcome, 1)
    assert "not read: src/huge.py: larger than" in outcome.stdout  # in the verdict, not only stderr


# --- 2. lines as Python sees them ------------------------------------------------------------------
SPLITTERS = {"form-feed": "\x0c", "fs": "\x1c", "gs": "\x1d", "rs": "\x1e", "nel": "\x85",
             "line-sep": "\u2028", "para-sep": "\u2029"}


def shifted(char: str) -> str:
    """A harmless line carries an allow; the sync is on the line below it. A character that
    ``str.splitlines()`` breaks at, earlier in the file, shifted the allow onto the sync."""
    return (f"import torch\n\nNOTE = 'a{char}b'\n\n\nclass GPUModelRunner:\n"
            "    def execute_model(self):\n"
            "        x = 1  # syncgate: allow[device_sync] harmless line\n"
            "        torch.cuda.synchronize()\n")


@pytest.mark.parametrize("char", SPLITTERS.values(), ids=SPLITTERS.keys())
def test_an_allow_cannot_slide_onto_the_sync_below(sandbox, char):
    plain_tree(sandbox.work / "src", shifted(char))
    outcome = sandbox.run(["scan", "src", "--format", "json"])
    verdict(outcome, 1)
    [finding] = json.loads(outcome.stdout)["findings"]
    assert (finding["line"], finding["code"], finding["guard"]) == (9, "torch.cuda.synchronize()", "none")


def test_allow_text_in_a_string_on_the_line_allows_nothing(sandbox):
    plain_tree(sandbox.work / "src", SYNCING.replace(
        "torch.cuda.synchronize()\n",
        "torch.cuda.synchronize(); s = '# syncgate: allow[device_sync] only a string'\n"))
    verdict(sandbox.run(["scan", "src"]), 1, r"device_sync torch\.cuda\.synchronize .* FAIL")


def test_allow_text_in_a_string_line_above_allows_nothing(sandbox):
    plain_tree(sandbox.work / "src", SYNCING.replace(
        "        torch.cuda.synchronize()\n",
        '        s = """\n# syncgate: allow[device_sync] inside a string"""\n'
        "        torch.cuda.synchronize()\n"))
    verdict(sandbox.run(["scan", "src"]), 1, r"device_sync torch\.cuda\.synchronize .* FAIL")


def test_a_baseline_records_the_code_of_the_sync_line(sandbox):
    plain_tree(sandbox.work / "src", shifted("\x85").replace("  # syncgate: allow[device_sync] harmless line", ""))
    verdict(sandbox.run(["scan", "src", "--write-baseline", "base.json"]), 0)
    [entry] = json.loads((sandbox.work / "base.json").read_text())["findings"]
    assert entry["code"] == "torch.cuda.synchronize()"


# --- 5. a tree's settings stay in the tree ------------------------------------------------------
def test_no_settings_from_a_parent_folder_without_git(sandbox):
    """A pyproject.toml in a shared parent folder cannot turn a FAIL into ok."""
    plain_tree(sandbox.work / "proj" / "src")
    (sandbox.work / "allow.toml").write_text(ALLOWING_BUDGET)
    (sandbox.work / "pyproject.toml").write_text('[tool.syncgate]\nbudget = "allow.toml"\n')
    verdict(sandbox.run(["scan", "proj/src"]), 1, r"settings: none")


def _project(sandbox, budget_value: str) -> Path:
    root = sandbox.work / "proj"
    plain_tree(root / "src")
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text(f"[tool.syncgate]\nbudget = {json.dumps(budget_value)}\n")
    return root


def test_an_absolute_budget_path_is_refused(sandbox):
    (sandbox.work / "outside.toml").write_text(ALLOWING_BUDGET)
    _project(sandbox, str(sandbox.work / "outside.toml"))
    verdict(sandbox.run(["scan", "proj/src"]), 2, r"tool\.syncgate\.budget: must be a path relative")


def test_a_dotdot_budget_path_is_refused(sandbox):
    (sandbox.work / "outside.toml").write_text(ALLOWING_BUDGET)
    _project(sandbox, "../outside.toml")
    verdict(sandbox.run(["scan", "proj/src"]), 2, r"tool\.syncgate\.budget: must be a path relative")


def test_a_symlinked_budget_out_of_the_tree_is_refused(sandbox):
    (sandbox.work / "outside.toml").write_text(ALLOWING_BUDGET)
    root = _project(sandbox, "budget.toml")
    (root / "budget.toml").symlink_to(sandbox.work / "outside.toml")
    verdict(sandbox.run(["scan", "proj/src"]), 2, r"tool\.syncgate\.budget: resolves out of the scanned tree")


def test_a_symlinked_baseline_out_of_the_tree_is_refused(sandbox):
    (sandbox.work / "known.json").write_text("{}")
    root = _project(sandbox, "budget.toml")
    (root / "pyproject.toml").write_text('[tool.syncgate]\nbaseline = "known.json"\n')
    (root / "known.json").symlink_to(sandbox.work / "known.json")
    verdict(sandbox.run(["scan", "proj/src"]), 2, r"tool\.syncgate\.baseline: resolves out")


def test_a_pyproject_symlinked_out_of_the_tree_is_not_read(sandbox):
    (sandbox.work / "allow.toml").write_text(ALLOWING_BUDGET)
    (sandbox.work / "shared.toml").write_text(
        f'[tool.syncgate]\nbudget = "{sandbox.work / "allow.toml"}"\n')
    root = sandbox.work / "proj"
    plain_tree(root / "src")
    (root / ".git").mkdir()
    (root / "pyproject.toml").symlink_to(sandbox.work / "shared.toml")
    verdict(sandbox.run(["scan", "proj/src"]), 2, r"pyproject\.toml: <file>: is a symlink out of the scanned tree")


def test_nothing_read_outside_the_tree_is_echoed(sandbox):
    (sandbox.work / "secret.toml").write_text('extends = "SECRET-TOKEN-42"\n')
    _project(sandbox, "../secret.toml")
    text = verdict(sandbox.run(["scan", "proj/src"]), 2)
    assert "SECRET-TOKEN-42" not in text


def test_settings_in_force_are_in_the_json_verdict_even_when_none(sandbox):
    plain_tree(sandbox.work / "src")
    outcome = sandbox.run(["scan", "src", "--format", "json"])
    verdict(outcome, 1)
    settings = json.loads(outcome.stdout)["settings"]
    assert settings["source"] is None
    assert settings["searched"].endswith("src")


def test_settings_in_force_are_in_checks_scan_verdict(sandbox):
    vllm_tree(sandbox.work / "tree")
    (sandbox.work / "tree" / "pyproject.toml").write_text('[tool.syncgate]\ndevice = "cuda"\n')
    outcome, reports = check_scan(sandbox, sandbox.work / "tree")
    verdict(outcome, 0, r"settings: \S*tree/pyproject\.toml \[tool\.syncgate\]: device = 'cuda'")
    notes = json.loads((reports / "report.json").read_text())["levels"]["scan"]["notes"]
    assert any(n.startswith("settings: ") for n in notes)

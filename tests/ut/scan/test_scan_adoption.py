"""The scan as a vLLM engineer meets it (issue 17), through the real console script: known
findings (inline allow, baseline, [tool.syncgate], extends), output like a linter's, a fix on
every failure, one counting rule, --failing-only in every format."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SYNCGATE = Path(sys.executable).with_name("syncgate")
RUNNER = "tiny_model_runner.py"


def scan(*args, cwd=None, env=None):
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run([str(SYNCGATE), "scan", *args], capture_output=True, text=True,
                          timeout=180, cwd=cwd, env={**environ, **(env or {})})


@pytest.fixture
def tree(scan_data, tmp_path):
    """A writable copy of the adoption fixture, as the root of a project (with .git)."""
    root = tmp_path / "proj"
    shutil.copytree(scan_data / "adoption", root)
    (root / ".git").mkdir()
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


# output like a linter's -------------------------------------------------------------------------


def test_text_shows_failing_sites_once_with_entry_points_and_fix(tree):
    done = scan("worker", cwd=tree)
    assert done.returncode == 1
    out = done.stdout
    assert "\x1b[" not in out  # a pipe: no colour
    blocks = re.findall(rf"^worker/{RUNNER}:(\d+): (\w+) ", out, re.M)
    assert blocks == [("14", "device_sync"), ("23", "blocking_readback")]  # failures only, once each
    readback = out.split(f"worker/{RUNNER}:23:")[1]
    assert "entry points (2): TinyModelRunner.execute_model, TinyModelRunner.sample_tokens" in readback
    assert "fix: do not read device values on the host in the step" in readback
    assert "# syncgate: allow[blocking_readback] <why>" in readback
    assert 'site = "tiny_model_runner:TinyModelRunner._bookkeeping"' in readback
    assert "FAIL: 2 failing site(s) of 3 (3 of 4 site x entry pairs)" in out
    assert "1 guarded, allowed or known site(s) not shown (-v shows them)" in out


def test_verbose_shows_guarded_sites(tree):
    done = scan("worker", "-v", cwd=tree)
    guarded = f"worker/{RUNNER}:19: blocking_readback Tensor.tolist in TinyModelRunner.sample_tokens"
    assert f"{guarded}  ok (speculation)" in done.stdout
    assert "not shown" not in done.stdout


@pytest.mark.parametrize(("env", "coloured"), [({"FORCE_COLOR": "1"}, True),
                                                ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
                                                ({}, False)])
def test_colour_honours_no_color_and_force_color(tree, env, coloured):
    done = scan("worker", cwd=tree, env=env)
    assert ("\x1b[31mFAIL" in done.stdout) is coloured
    assert ("\x1b[" in done.stdout) is coloured


def test_json_counts_sites_first_and_failing_only_filters(tree):
    full = json.loads(scan("worker", "--format", "json", cwd=tree).stdout)
    summary = full["summary"]
    assert summary["counting"] == "sites"
    assert (summary["sites"], summary["failing_sites"]) == (3, 2)
    assert (summary["pairs"], summary["failing_pairs"]) == (4, 3)
    assert all("fix" in f for f in full["findings"] if f["guard"] == "none")
    only = json.loads(scan("worker", "--format", "json", "--failing-only", cwd=tree).stdout)
    assert {f["guard"] for f in only["findings"]} == {"none"}
    assert len(only["findings"]) == 3
    assert only["summary"] == summary  # the counts describe the scan, not the filter


def test_sarif_failing_only(tree):
    full = json.loads(scan("worker", "--format", "sarif", cwd=tree).stdout)
    only = json.loads(scan("worker", "--format", "sarif", "--failing-only", cwd=tree).stdout)
    levels = [r["level"] for r in full["runs"][0]["results"]]
    assert "note" in levels
    assert {r["level"] for r in only["runs"][0]["results"]} == {"error"}


def test_github_format_is_errors_per_site_and_a_summary_line(tree):
    done = scan("worker", "--format", "github", cwd=tree)
    lines = done.stdout.splitlines()
    errors = [line for line in lines if line.startswith("::")]
    assert [e.split(" ", 1)[0] for e in errors] == ["::error", "::error"]  # no notices
    assert f"file=worker/{RUNNER},line=23" in errors[1]
    assert "fix: do not read device values on the host in the step" in errors[1]
    assert lines[-1].startswith("syncgate scan: FAIL: 2 failing site(s) of 3")


def test_step_summary_in_github(tree):
    summary = tree / "summary.md"
    scan("worker", "--format", "github", cwd=tree, env={"GITHUB_STEP_SUMMARY": str(summary)})
    text = summary.read_text()
    assert text.startswith("## syncgate scan: FAIL: 2 failing site(s) of 3")
    assert f"| `worker/{RUNNER}:23` | blocking\\_readback | `Tensor.tolist` | " in text
    assert "TinyModelRunner.execute\\_model, TinyModelRunner.sample\\_tokens |" in text
    scan("worker", cwd=tree, env={"GITHUB_STEP_SUMMARY": ""})
    assert summary.read_text() == text  # not in a GitHub step: nothing written


def test_output_file_is_announced(tree):
    done = scan("worker", "--format", "json", "--output", "out/scan.json", cwd=tree)
    assert done.stdout == ""
    assert "syncgate scan: wrote out/scan.json (FAIL: 2 failing site(s) of 3" in done.stderr
    assert json.loads((tree / "out" / "scan.json").read_text())["summary"]["failing_sites"] == 2


# known findings ---------------------------------------------------------------------------------


def test_inline_allow_with_reason_allows_that_kind(tree):
    _edit(tree / "worker" / RUNNER, "        return self.sampled.tolist()",
          "        return self.sampled.tolist()  "
          "# syncgate: allow[blocking_readback] the ids go to the scheduler anyway")
    done = scan("worker", "--format", "json", cwd=tree)
    report = json.loads(done.stdout)
    at23 = [f for f in report["findings"] if f["line"] == 23]
    assert {f["guard"] for f in at23} == {"allowed"}
    assert at23[0]["reason"] == "inline: the ids go to the scheduler anyway"
    assert report["summary"]["failing_sites"] == 1
    assert done.returncode == 1  # the device_sync at line 14 still fails


@pytest.mark.parametrize(("comment", "warning"), [
    ("# syncgate: allow[blocking_readback]", "needs a reason"),
    ("# syncgate: allow[readback] because", "unknown sync kind readback"),
    ("# syncgate: allow[device_sync] wrong kind", None),
])
def test_inline_allow_without_reason_or_of_another_kind_allows_nothing(tree, comment, warning):
    _edit(tree / "worker" / RUNNER, "        return self.sampled.tolist()",
          f"        return self.sampled.tolist()  {comment}")
    done = scan("worker", "--format", "json", cwd=tree)
    report = json.loads(done.stdout)
    assert {f["guard"] for f in report["findings"] if f["line"] == 23} == {"none"}
    if warning:
        assert f"worker/{RUNNER}:23: # syncgate: " in done.stderr
        assert warning in done.stderr


def test_baseline_keeps_known_findings_and_fails_new_ones(tree):
    wrote = scan("worker", "--write-baseline", ".syncgate-baseline.json", cwd=tree)
    assert wrote.returncode == 0, wrote.stderr
    assert "wrote 2 known failing site(s) to .syncgate-baseline.json" in wrote.stderr
    doc = json.loads((tree / ".syncgate-baseline.json").read_text())
    assert [e["file"] for e in doc["findings"]] == [f"worker/{RUNNER}"] * 2
    known = scan("worker", "--baseline", ".syncgate-baseline.json", cwd=tree)
    assert known.returncode == 0, known.stdout
    assert "ok: 0 failing site(s)" in known.stdout
    # lines move: still known; a new sync: fails
    _edit(tree / "worker" / RUNNER, "    def _bookkeeping(self) -> list:\n",
          "    def _bookkeeping(self) -> list:\n        torch.cuda.current_stream().synchronize()\n\n")
    moved = scan("worker", "--baseline", ".syncgate-baseline.json", "--format", "json", cwd=tree)
    report = json.loads(moved.stdout)
    assert moved.returncode == 1
    assert [(f["kind"], f["guard"]) for f in report["findings"] if f["guard"] in ("none", "baseline")
            and f["entry"].endswith("sample_tokens")] == [("stream_sync", "none"),
                                                          ("blocking_readback", "baseline")]


def test_a_bad_baseline_is_one_line_exit_2(tree):
    (tree / "b.json").write_text('{"schema": "other"}')
    done = scan("worker", "--baseline", "b.json", cwd=tree)
    assert done.returncode == 2
    assert done.stderr.strip() == ("syncgate scan: error: b.json: schema: expected "
                                   "'vllm_syncgate.scan.baseline/1' (write one with --write-baseline)")


def test_tool_syncgate_in_pyproject_is_found_and_printed(tree):
    (tree / "budget.toml").write_text('extends = "cuda"\n[[budget]]\nspeculation = false\n'
                                      '[[budget.allow]]\nsite = "tiny_model_runner:TinyModelRunner.execute_model"\n'
                                      'kind = "device_sync"\nreason = "fixture: start-up only"\n')
    (tree / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.syncgate]\nbudget = "budget.toml"\n')
    done = scan(str(tree / "worker"), cwd=tree.parent)
    assert done.stdout.splitlines()[0] == f"settings: {tree / 'pyproject.toml'} [tool.syncgate]: budget = 'budget.toml'"
    assert "FAIL: 1 failing site(s) of 3" in done.stdout  # the extended budget allowed line 14
    report = json.loads(scan(str(tree / "worker"), "--format", "json", cwd=tree.parent).stdout)
    assert report["settings"] == {"source": str(tree / "pyproject.toml"), "values": {"budget": "budget.toml"},
                                  "searched": f"{tree / 'worker'} up to {tree}"}
    github = scan(str(tree / "worker"), "--format", "github", cwd=tree.parent)
    assert github.stderr.startswith(f"syncgate scan: settings: {tree / 'pyproject.toml'} [tool.syncgate]")
    flag = scan(str(tree / "worker"), "--budget", str(tree / "budget.toml"), "--device", "cuda",
                cwd=tree.parent)
    assert "FAIL: 1 failing site(s)" in flag.stdout


def test_bad_tool_syncgate_is_one_line_exit_2(tree):
    (tree / "pyproject.toml").write_text('[tool.syncgate]\ndevise = "npu"\n')
    done = scan("worker", cwd=tree)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("pyproject.toml: tool.syncgate.devise: unknown key "
                                        "(expected device, budget, baseline, patterns, entry, exclude)")


def test_readme_failure_example_has_the_real_shape(tree):
    """The README's example failure is what the scan prints (fix line and all)."""
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    example = readme.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    done = scan("worker", cwd=tree).stdout
    head = re.sub(r"^\S+:\d+: ", "", example[0])
    assert re.match(r"\w+ \S+ in \S+  FAIL$", head), example[0]
    for line in example[1:]:
        prefix = line.split(":")[0] + ":"
        assert any(out.startswith(prefix) for out in done.splitlines()), line

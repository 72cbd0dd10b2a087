"""CI glue through the real CLI: the job summary of ``syncgate check``."""

import os
import subprocess
import sys
from pathlib import Path

SYNCGATE = Path(sys.executable).with_name("syncgate")


def _check(tmp_path, *args, env=None):
    return subprocess.run([str(SYNCGATE), "check", "--levels", "scan", "--report-dir",
                           str(tmp_path / "r"), *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})


def test_step_summary_is_appended_when_github_sets_it(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    done = _check(tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode in (0, 1), done.stderr
    text = summary.read_text()
    assert text.startswith("earlier step\n## syncgate check: ")  # appended, not replaced
    verdict = "PASS" if done.returncode == 0 else "FAIL"
    assert f"## syncgate check: {verdict}" in text
    assert "| level | result | time | detail |" in text
    assert "| scan | " in text
    assert f"`{tmp_path / 'r' / 'report.json'}`" in text
    flag = tmp_path / "flag.md"
    again = _check(tmp_path, "--github-summary", str(flag), env={"GITHUB_STEP_SUMMARY": ""})
    assert again.returncode == done.returncode
    assert flag.read_text().startswith(f"## syncgate check: {verdict}")


def test_no_summary_outside_github(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = subprocess.run([str(SYNCGATE), "check", "--levels", "scan", "--report-dir",
                           str(tmp_path / "r")], capture_output=True, text=True, timeout=600,
                          env=env, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]

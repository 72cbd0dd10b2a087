"""The CLI a new user meets: -V, help with defaults and examples, exit codes, one flag vocabulary.

Everything here runs the real console script (``.venv/bin/syncgate``) as a subprocess.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_syncgate import __version__
from vllm_syncgate.cli import COMMANDS, build_parser
from vllm_syncgate.environment import package_version

SYNCGATE = Path(sys.executable).with_name("syncgate")


def syncgate(*args: str, cwd: Path | None = None, umask: int | None = None,
             env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(SYNCGATE), *args], capture_output=True, text=True, timeout=180,
                          cwd=cwd, env={**os.environ, **(env or {})},
                          preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)


def _option_blocks(help_text: str) -> dict[str, str]:
    """``--flag`` -> its help text, from argparse's options section."""
    blocks: dict[str, str] = {}
    current = None
    for line in help_text.splitlines():
        start = re.match(r"^  (-\w, )?(--[\w-]+)", line)
        if start:
            current = start.group(2)
            blocks[current] = line
        elif current and line.startswith("    "):
            blocks[current] += " " + line.strip()
        else:
            current = None
    return blocks


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag):
    done = syncgate(flag)
    assert done.returncode == 0
    line = done.stdout.strip()
    assert line.startswith(f"vllm-syncgate {__version__} (torch ")
    ascend = package_version("vllm-ascend") or "not installed"  # "not installed" on a CPU machine
    assert re.search(rf", vllm(-cpu)? (\S+|not installed), vllm-ascend {re.escape(ascend)}\)$", line), line



def test_top_help_lists_exit_codes_and_every_command():
    done = syncgate("--help")
    assert done.returncode == 0
    out = done.stdout
    for code in ("0 ", "1 ", "2 ", "130 "):
        assert re.search(rf"^  {code}", out, re.M), code
    for name in COMMANDS:
        assert re.search(rf"^    {name}\s", out, re.M), name


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_has_examples_and_every_option_its_help_and_default(command):
    done = syncgate(command, "--help")
    assert done.returncode == 0, done.stderr
    examples = done.stdout.split("examples:\n", 1)[1]
    assert f"syncgate {command}" in examples.split("\n\n")[0]
    blocks = _option_blocks(done.stdout)
    sub = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == command)[1]
    for action in sub._actions:
        if not action.option_strings or action.help == "==SUPPRESS==" or action.dest == "help":
            continue
        flag = next(o for o in action.option_strings if o.startswith("--"))
        text = blocks[flag]
        assert len(text) > len(flag) + 12, f"{command} {flag}: no help"
        if action.default not in (None, False, []):
            assert "default" in text, f"{command} {flag}: default {action.default!r} not shown"


def test_defaults_are_shown_where_the_issue_found_them_hidden():
    scan = _option_blocks(syncgate("scan", "--help").stdout)
    assert "(default: text)" in scan["--format"]
    repro = _option_blocks(syncgate("repro", "--help").stdout)
    for flag, value in (("--confidence", "0.95"), ("--interval", "exact"), ("--broken-after", "14"),
                        ("--replay-runs", "3"), ("--timeout", "no limit")):
        assert f"default: {value}" in repro[flag], flag


def test_report_dir_is_the_spelling_and_report_still_works_with_a_deprecation_line(tmp_path):
    new = syncgate("check", "--levels", "scan", "--source", str(tmp_path / "nope"),
                   "--report-dir", str(tmp_path / "r"))
    old = syncgate("check", "--levels", "scan", "--source", str(tmp_path / "nope"),
                   "--report", str(tmp_path / "r"))
    assert new.returncode == old.returncode == 2  # the source is missing: both parsed the flag
    assert "deprecated" not in new.stderr
    warning, error = old.stderr.splitlines()
    assert warning == ("syncgate check: warning: --report is deprecated, use --report-dir "
                       "(the old spelling goes in syncgate 0.2)")
    assert error == new.stderr.strip()


def test_scan_profile_name_means_device_with_a_deprecation_line(scan_tree):
    new = syncgate("scan", str(scan_tree), "--device", "cpu", "--format", "json")
    old = syncgate("scan", str(scan_tree), "--profile", "cpu", "--format", "json")
    assert new.returncode == old.returncode
    assert new.stdout == old.stdout
    assert "--profile cpu is deprecated, use --device cpu" in old.stderr
    assert "deprecated" not in new.stderr


def test_scan_profile_file_takes_that_profiles_budget(scan_tree, tmp_path):
    bogus = syncgate("scan", str(scan_tree), "--profile", str(tmp_path / "none.toml"))
    assert bogus.returncode == 2
    assert bogus.stderr.count("\n") == 1
    assert "none.toml" in bogus.stderr
    from vllm_syncgate.profiles import builtin_profile_path

    done = syncgate("scan", str(scan_tree), "--profile", str(builtin_profile_path("cpu")))
    assert done.returncode in (0, 1), done.stderr


def test_annotate_and_devices_are_subcommands(tmp_path):
    (tmp_path / "junit.xml").write_text(
        '<testsuite name="s"><testcase classname="c" name="n" file="vllm/x.py" line="7">'
        '<failure message="boom">t</failure></testcase></testsuite>')
    done = syncgate("annotate", str(tmp_path))
    assert done.returncode == 0
    assert done.stdout == "::error file=vllm/x.py,line=7,title=failure%3A c.n::boom\n"
    missing = syncgate("annotate", str(tmp_path / "none"))
    assert missing.returncode == 2
    assert missing.stderr.startswith("syncgate annotate: error: ")
    args = syncgate("devices", "run-args", "cuda", "--ids", "0")
    assert args.returncode == 0
    assert args.stdout.startswith("--")
    bad = syncgate("devices", "run-args", "cuda", "--ids", "x")
    assert bad.returncode == 2
    assert bad.stderr.strip() == "syncgate devices: error: --ids 'x': expected comma-separated integers"


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_scan_output_follows_the_umask(scan_tree, tmp_path, umask, mode):
    out = tmp_path / "out" / "scan.json"
    done = syncgate("scan", str(scan_tree), "--format", "json", "--output", str(out), umask=umask)
    assert done.returncode in (0, 1), done.stderr
    assert out.stat().st_mode & 0o777 == mode
    assert out.parent.stat().st_mode & 0o777 == 0o777 & ~umask


def test_calibrate_json_is_now_output_with_a_deprecation_line(tmp_path):
    old = syncgate("calibrate", "--device", "cuda", "--recorded", "--json", str(tmp_path / "a.json"),
                   umask=0o022)
    new = syncgate("calibrate", "--device", "cuda", "--recorded", "--output", str(tmp_path / "b.json"),
                   umask=0o022)
    assert old.returncode == new.returncode == 0, old.stderr
    assert "--json is deprecated, use --output" in old.stderr
    assert "deprecated" not in new.stderr
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o644

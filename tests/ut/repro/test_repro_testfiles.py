"""Only files pytest's own configuration collects as tests reach a collection (repro.testfiles)."""

from __future__ import annotations

import textwrap

import pytest

from vllm_syncgate.repro.logs import parse_log
from vllm_syncgate.repro.reproduce import ReproVerdict, RerunConfig, reproduce
from vllm_syncgate.repro.runner import LocalRunner
from vllm_syncgate.repro.testfiles import TestFileRules, rules_from


def test_defaults_without_a_config_file():
    rules = rules_from({})
    assert rules.refusal("tests/test_a.py") is None
    assert rules.refusal("a_test.py") is None
    assert "python_files test_*.py *_test.py (pytest defaults)" in rules.refusal("tools/deploy.py")
    assert rules.refusal("tests/conftest.py") == "conftest.py is not a test file"


@pytest.mark.parametrize(("name", "text"), [
    ("pytest.ini", "[pytest]\npython_files = check_*.py\ntestpaths = t\n"),
    ("pyproject.toml", '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\ntestpaths = ["t"]\n'),
    ("pyproject.toml", '[tool.pytest]\npython_files = ["check_*.py"]\ntestpaths = ["t"]\n'),
    ("tox.ini", "[pytest]\npython_files = check_*.py\ntestpaths = t\n"),
    ("setup.cfg", "[tool:pytest]\npython_files = check_*.py\ntestpaths = t\n"),
])
def test_every_config_file_pytest_reads(name, text):
    rules = rules_from({name: text})
    assert rules == TestFileRules(("check_*.py",), ("t",), name)
    assert rules.refusal("t/sub/check_x.py") is None
    assert "outside testpaths t" in rules.refusal("other/check_x.py")
    assert "not a test file" in rules.refusal("t/test_x.py")


def test_the_first_applicable_file_wins_like_pytest():
    # a pyproject.toml without a pytest table does not count; an empty pytest.ini does
    assert rules_from({"pyproject.toml": "[project]\nname='x'\n",
                       "tox.ini": "[pytest]\npython_files = a_*.py\n"}).source == "tox.ini"
    assert rules_from({"pytest.ini": "", "tox.ini": "[pytest]\npython_files = a_*.py\n"}
                      ).python_files == ("test_*.py", "*_test.py")


def test_a_log_naming_a_helper_module_never_imports_it(tmp_path):
    """The issue's attack: `FAILED tools/deploy.py::test_x` must not run tools/deploy.py."""
    marker = tmp_path / "deploy-ran"
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "deploy.py").write_text(textwrap.dedent(f"""\
        open({str(marker)!r}, "w").close()
        def test_x():
            pass
        """))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ok.py").write_text("def test_y():\n    assert False\n")
    (tmp_path / "tests" / "conftest.py").write_text("")
    log = tmp_path / "ci.log"
    log.write_text("FAILED tools/deploy.py::test_x - boom\nFAILED tests/conftest.py::test_z\n"
                   "FAILED tests/test_ok.py::test_y - assert\n== 3 failed in 1.00s ==\n")
    verdicts = {v.nodeid: v for v in reproduce(parse_log(log), LocalRunner(tmp_path),
                                               RerunConfig(runs=1, workers=1))}
    assert not marker.exists()
    assert verdicts["tools/deploy.py::test_x"].verdict is ReproVerdict.MISSING
    assert "not a test file by python_files" in verdicts["tools/deploy.py::test_x"].detail
    assert verdicts["tests/conftest.py::test_z"].detail == "conftest.py is not a test file"
    assert verdicts["tests/test_ok.py::test_y"].verdict is ReproVerdict.BROKEN

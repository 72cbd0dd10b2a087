"""Which files pytest's own configuration would collect as tests: the only files repro collects.

pytest imports every file it is *given* on the command line, whatever its name, so passing a
path taken from a CI log to ``--collect-only`` would run the import-time code of any module the
log names (``FAILED tools/deploy.py::test_x``). Before anything is collected, each file is held
against the tree's ``python_files`` patterns and ``testpaths``, read from the same config file
pytest would pick (``pytest.toml``, ``pytest.ini``, ``pyproject.toml``, ``tox.ini``,
``setup.cfg``), and ``conftest.py`` is never a test file. Everything else is ``missing`` without
being imported.
"""

from __future__ import annotations

import configparser
import fnmatch
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Config files in the order pytest picks the first that applies.
CONFIG_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml",
                "tox.ini", "setup.cfg")
DEFAULT_PYTHON_FILES = ("test_*.py", "*_test.py")


@dataclass(frozen=True)
class TestFileRules:
    """``python_files`` and ``testpaths`` of one tree, and where they came from."""

    __test__ = False  # not a pytest test class, despite the name

    python_files: tuple[str, ...] = DEFAULT_PYTHON_FILES
    testpaths: tuple[str, ...] = ()
    source: str = "pytest defaults"

    def refusal(self, path: str) -> str | None:
        """Why pytest would not collect ``path`` (relative, ``/``-separated) as a test file."""
        name = path.rsplit("/", 1)[-1]
        if name == "conftest.py":
            return "conftest.py is not a test file"
        if not any(fnmatch.fnmatchcase(name if "/" not in p else path, p) for p in self.python_files):
            return f"not a test file by python_files {' '.join(self.python_files)} ({self.source})"
        if self.testpaths and not any(_under(path, t) for t in self.testpaths):
            return f"outside testpaths {' '.join(self.testpaths)} ({self.source})"
        return None


def _under(path: str, testpath: str) -> bool:
    parts, prefix = path.split("/"), testpath.strip("/").split("/")
    if prefix == ["."] or prefix == [""]:
        return True
    return len(parts) > len(prefix) and all(
        fnmatch.fnmatchcase(p, q) for p, q in zip(parts, prefix, strict=False))


def rules_from(texts: Mapping[str, str]) -> TestFileRules:
    """The rules of the first config file (name -> text, at the tree root) pytest would use."""
    for name in CONFIG_FILES:
        text = texts.get(name)
        if text is None:
            continue
        table = _ini_options(name, text)
        if table is None:
            continue
        return TestFileRules(_words(table.get("python_files"), DEFAULT_PYTHON_FILES),
                             _words(table.get("testpaths"), ()), name)
    return TestFileRules()


def _ini_options(name: str, text: str) -> Mapping[str, Any] | None:
    """The pytest section of config file ``name``, or None if it has none (or is unreadable)."""
    if name.endswith(".toml"):
        try:
            data = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError):
            return None
        if name != "pyproject.toml":
            return data.get("pytest", data)
        tool = data.get("tool", {}).get("pytest")
        if not isinstance(tool, dict):
            return None
        options = tool.get("ini_options")
        return options if isinstance(options, dict) else tool
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    section = {"setup.cfg": "tool:pytest", "tox.ini": "pytest"}.get(name, "pytest")
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if name in ("pytest.ini", ".pytest.ini") else None  # these apply even when empty


def _words(value: Any, default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return default
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    try:
        return tuple(shlex.split(str(value)))
    except ValueError:
        return tuple(str(value).split())

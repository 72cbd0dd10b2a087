"""Shared by every test directory: where test data lives."""

import signal
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DATA_DIR = Path(__file__).parent / "data"
# Test data is read by tests, never collected as tests: tests/data/npu/upstream_example/ holds a test
# written for vllm-ascend's own suite, which the plugin tests run in a pytester tree of its own.
collect_ignore = ["data"]


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background by a shell without job control (``cmd &``, nohup, some
    CI agents) inherits SIGINT ignored, and so does every child it starts: the tests that press
    Ctrl-C on a check, a repro or a server would then time out instead of testing the teardown.
    Python keeps an ignored SIGINT ignored; a handled one is reset to the default on exec, so
    the children get Ctrl-C as from a terminal."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA_DIR


@pytest.fixture(scope="session")
def vllm_branch(tmp_path_factory):
    """``make(name, edit)``: a branch of the installed vLLM's Python (its ``.py`` files copied
    into a temp tree) with ``edit(root / "vllm")`` applied; no compiled or data files, so a level
    can only run it over the installed build (the overlay). Edits go through the ``edit_method``
    fixture, so no upstream text is written into this project."""
    import importlib.util
    import shutil

    installed = Path(next(iter(importlib.util.find_spec("vllm").submodule_search_locations)))

    def python_only(folder, names):
        return [n for n in names if n == "__pycache__"
                or not (n.endswith(".py") or (Path(folder) / n).is_dir())]

    def make(name, edit):
        root = tmp_path_factory.mktemp(name)
        shutil.copytree(installed, root / "vllm", ignore=python_only)
        edit(root / "vllm")
        return root

    return make


@pytest.fixture(scope="session")
def edit_method():
    return _edit_method


def _edit_method(path, cls, method, body=None, prepend=None):
    """Replace a method's body with ``body`` lines, or put ``prepend`` lines before its first
    statement after the docstring; ``body=[]`` deletes the method (an override removed)."""
    import ast

    lines = path.read_text().splitlines(keepends=True)
    klass = next(n for n in ast.parse("".join(lines)).body
                 if isinstance(n, ast.ClassDef) and n.name == cls)
    fn = next(n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == method)
    first = fn.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(fn.body) > 1:
        first = fn.body[1]
    indent = " " * first.col_offset
    if body == []:
        start = (fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno) - 1
        del lines[start:fn.end_lineno]
    elif body is not None:
        lines[first.lineno - 1:fn.end_lineno] = [indent + line + "\n" for line in body]
    else:
        lines[first.lineno - 1:first.lineno - 1] = [indent + line + "\n" for line in prepend]
    path.write_text("".join(lines))

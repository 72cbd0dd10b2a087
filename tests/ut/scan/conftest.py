"""Fixtures for the scan tests: fixture runner trees, the installed vLLM sources, a CLI runner."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from vllm_syncgate.cli import main
from vllm_syncgate.scan.callgraph import scan


@pytest.fixture(scope="session")
def scan_data(data_dir: Path) -> Path:
    return data_dir / "scan"


@pytest.fixture(scope="session")
def vllm_worker_dir() -> Path:
    """``vllm/v1/worker`` of the installed vLLM (located, never imported)."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("vllm is not installed (pip install -e .[cpu])")
    return Path(next(iter(spec.submodule_search_locations))) / "v1" / "worker"


@pytest.fixture
def fix_shape_copy(scan_data: Path, tmp_path: Path) -> Path:
    """A writable copy of the #13382-shaped fixture, for mutants."""
    target = tmp_path / "fix_shape"
    shutil.copytree(scan_data / "fix_shape", target)
    return target


@pytest.fixture
def sites_of() -> Callable[[Path, list[str], str], set[tuple[str, int, str, str]]]:
    """``sites_of(path, entries, device)``: ``(file name, line, kind, guard)`` of every finding of
    a scan of ``path``, the shape ``expected_sites`` reads off a fixture's marked lines."""

    def sites(path: Path, entries: list[str], device: str) -> set[tuple[str, int, str, str]]:
        return {(Path(f.file).name, f.line, f.kind, f.guard)
                for f in scan([str(path)], entries=entries, device=device).findings}

    return sites


@pytest.fixture
def run_scan(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``syncgate scan ARGS`` in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["scan", *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture
def scan_json(run_scan: Callable[..., tuple[int, str, str]]) -> Callable[..., tuple[int, dict]]:
    """Run the scan with ``--format json``; returns (exit code, parsed report)."""

    def run(*args: str) -> tuple[int, dict]:
        code, out, _ = run_scan(*args, "--format", "json")
        return code, json.loads(out)

    return run


_MARKER = re.compile(r"#\s*expect:\s*(\w+)\s+(\w+)")


@pytest.fixture
def expected_sites() -> Callable[[Path], set[tuple[str, int, str, str]]]:
    """``(file name, line, kind, guard)`` of every line marked ``# expect: KIND GUARD``."""

    def marked(path: Path) -> set[tuple[str, int, str, str]]:
        found = set()
        for file in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            for number, line in enumerate(file.read_text().splitlines(), start=1):
                match = _MARKER.search(line)
                if match:
                    found.add((file.name, number, match.group(1), match.group(2)))
        return found

    return marked


_FAMILY_MARKER = re.compile(r"#\s*expect:\s*(\w+)\s+(\w+)\s+(\w+)")


@pytest.fixture
def marked_families() -> Callable[[Path], dict[tuple[str, int, str, str], str]]:
    """``(file name, line, kind, guard) -> family`` of every line under a folder marked
    ``# expect: KIND GUARD FAMILY`` (the rule-family fixtures, whose broken variants must lose
    exactly their family's lines)."""

    def marked(root: Path) -> dict[tuple[str, int, str, str], str]:
        found = {}
        for file in sorted(root.rglob("*.py")):
            for number, line in enumerate(file.read_text().splitlines(), start=1):
                match = _FAMILY_MARKER.search(line)
                if match:
                    found[(file.name, number, match.group(1), match.group(2))] = match.group(3)
        return found

    return marked


@pytest.fixture
def lost_families(marked_families):
    """``lost(root, reported)``: the families of ``root``'s marked lines that ``reported`` (the
    ``(file name, line, kind, guard)`` of a scan's findings) lacks: what a broken variant lost."""

    def lost(root: Path, reported: set[tuple[str, int, str, str]]) -> set[str]:
        expected = marked_families(root)
        return {expected[site] for site in set(expected) - reported}

    return lost


@pytest.fixture
def line_of() -> Callable[[Path, str], int]:
    """``line_of(path, text)``: the one line of a fixture file holding ``text`` (a broken
    variant's extra or lost site is named by its code, not by a number that edits shift)."""

    def find(path: Path, text: str) -> int:
        (line,) = [n for n, code in enumerate(path.read_text().splitlines(), start=1)
                   if text in code]
        return line

    return find

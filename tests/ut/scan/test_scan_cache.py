"""The scan's content-hash cache: an unchanged tree is read back, any change scans again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vllm_syncgate.audit.budgets import AllowRule
from vllm_syncgate.scan import cache as scan_cache
from vllm_syncgate.scan import callgraph
from vllm_syncgate.scan.callgraph import scan

ENTRY = ["WhyModelRunner.execute_model"]


@pytest.fixture
def tree(scan_data: Path, tmp_path: Path) -> Path:
    root = tmp_path / "why"
    shutil.copytree(scan_data / "why", root)
    return root


def _worker(tree: Path) -> str:
    return str(tree / "whypkg" / "worker")


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every real scan instead of letting it run unseen."""
    scans: list[str] = []
    real = callgraph._scan

    def counted(*args, **kwargs):
        scans.append("scan")
        return real(*args, **kwargs)

    monkeypatch.setattr(callgraph, "_scan", counted)
    return scans


def test_an_unchanged_tree_is_read_back(tree, tmp_path, monkeypatch):
    scans = _no_parse(monkeypatch)
    first = scan([_worker(tree)], entries=ENTRY, cache_dir=tmp_path / "c")
    again = scan([_worker(tree)], entries=ENTRY, cache_dir=tmp_path / "c")
    assert scans == ["scan"]
    assert again == first
    assert again.failing
    assert again.exit_code == 1


def test_a_changed_followed_file_scans_again(tree, tmp_path, monkeypatch):
    """The sampler is not under the scanned path, but its bytes are part of the key."""
    scans = _no_parse(monkeypatch)
    scan([_worker(tree)], entries=ENTRY, cache_dir=tmp_path / "c")
    sampler = tree / "whypkg" / "sample" / "sampler.py"
    text = sampler.read_text()
    assert text.count("        if banned.numel():\n") == 1
    text = text.replace("        if banned.numel():\n",
                        "        greedy.tolist()\n        if banned.numel():\n")
    sampler.write_text(text)
    line = text.splitlines().index("        greedy.tolist()") + 1
    result = scan([_worker(tree)], entries=ENTRY, cache_dir=tmp_path / "c")
    assert scans == ["scan", "scan"]
    assert any(f.qualname == "Sampler.forward" and f.line == line for f in result.failing)


def test_an_added_file_the_budgets_and_the_version_scan_again(tree, tmp_path, monkeypatch):
    scans = _no_parse(monkeypatch)
    directory = tmp_path / "c"
    scan([_worker(tree)], entries=ENTRY, cache_dir=directory)
    (tree / "whypkg" / "worker" / "extra.py").write_text("X = 1\n")
    scan([_worker(tree)], entries=ENTRY, cache_dir=directory)
    rule = AllowRule(site="whypkg.*", reason="everything", kind="event_sync")
    scan([_worker(tree)], entries=ENTRY, allow=[rule], cache_dir=directory)
    monkeypatch.setattr(scan_cache, "__version__", "999")
    scan([_worker(tree)], entries=ENTRY, allow=[rule], cache_dir=directory)
    assert len(scans) == 4


def test_a_broken_cache_entry_is_no_error(tree, tmp_path, monkeypatch):
    scans = _no_parse(monkeypatch)
    directory = tmp_path / "c"
    first = scan([_worker(tree)], entries=ENTRY, cache_dir=directory)
    for entry in directory.glob("*.json"):
        entry.write_text("{not json")
    again = scan([_worker(tree)], entries=ENTRY, cache_dir=directory)
    assert again == first
    assert len(scans) == 2
    assert not list(directory.glob("*.tmp"))  # no temporary left behind


def test_the_cache_lives_in_the_users_cache_never_the_tree_and_can_be_turned_off(tmp_path, monkeypatch):
    # a pull request controls the working tree: an entry planted in its .syncgate_cache would
    # report the PR's own files as clean, so the cache is never looked up there
    tree = tmp_path / "checkout"
    tree.mkdir()
    monkeypatch.chdir(tree)
    monkeypatch.setenv("SYNCGATE_CACHE_DIR", str(tmp_path / "user"))
    monkeypatch.delenv("SYNCGATE_NO_CACHE", raising=False)
    folder = scan_cache.scan_cache_dir()
    assert folder == tmp_path / "user" / "scan"
    assert not list(tree.iterdir())
    monkeypatch.setenv("SYNCGATE_NO_CACHE", "1")
    assert scan_cache.scan_cache_dir() is None


def test_a_fifo_in_the_tree_is_hashed_as_unreadable_not_waited_on(tree, tmp_path, monkeypatch):
    scans = _no_parse(monkeypatch)
    os.mkfifo(tree / "whypkg" / "worker" / "fifo.py")
    first = scan([_worker(tree)], entries=ENTRY, cache_dir=tmp_path / "c")
    again = scan([_worker(tree)], entries=ENTRY, cache_dir=tmp_path / "c")
    assert again == first
    assert len(scans) == 1
    assert [p.reason for p in again.problems] == ["cannot be read (not a regular file)"]


def test_an_edited_engine_scans_again(tree, tmp_path, monkeypatch):
    """Same version string, other engine code (a development tree): not the old result."""
    scans = _no_parse(monkeypatch)
    scan([_worker(tree)], entries=ENTRY, cache_dir=tmp_path / "c")
    monkeypatch.setattr(scan_cache, "_engine", lambda: "edited")
    scan([_worker(tree)], entries=ENTRY, cache_dir=tmp_path / "c")
    assert len(scans) == 2

"""The scan's collector handling (scan/memory.py): a process's own ``syncgate scan`` leaves the
scan's garbage to its exit; an in-process caller (tests, ``syncgate check``) keeps it collected."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from vllm_syncgate.cli import main
from vllm_syncgate.scan.memory import left_to_exit, paused_collector


@pytest.fixture
def unfrozen():
    yield
    gc.unfreeze()


def _cycle() -> None:
    a: list = []
    a.append(a)


def test_left_to_exit_freezes_what_the_block_leaves_and_restores_the_collector(unfrozen):
    assert gc.isenabled()
    before = gc.get_freeze_count()
    with left_to_exit():
        assert not gc.isenabled()
        for _ in range(1000):
            _cycle()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + 1000


def test_paused_collector_alone_freezes_nothing():
    before = gc.get_freeze_count()
    with paused_collector():
        for _ in range(1000):
            _cycle()
    assert gc.isenabled()
    assert gc.get_freeze_count() == before


def test_scan_called_in_process_keeps_its_garbage_collectable(scan_data: Path, capsys):
    # the broken variant (leaving the garbage whoever calls) would freeze here
    before = gc.get_freeze_count()
    main(["scan", str(scan_data / "gaps" / "gappkg" / "worker"), "--entry",
          "GapModelRunner.execute_model"])
    capsys.readouterr()
    assert gc.get_freeze_count() == before
    assert gc.isenabled()

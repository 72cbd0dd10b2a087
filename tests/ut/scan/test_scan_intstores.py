"""A member the constructor stores as int arithmetic of its int arguments
(``self.num_queries_per_kv = self.num_heads // self.num_kv_heads``, with ``num_kv_heads: int |
None`` resolved by a conditional) holds a Python int, so ``repeat_interleave`` by it reads
nothing back (the multi-head attention of Habana's and Gaudi's vLLM trees; audits 11 and 13).
A repeat count that is a device tensor still does. Fixture: tests/data/scan/intstores. Broken
variant: with only literals, ``int()`` and int parameters taken as int stores, the integer
repeat fails again."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph

ENTRY: list[str] = []


@pytest.fixture
def intstores(scan_data: Path) -> Path:
    return scan_data / "intstores"


@pytest.fixture
def expected(intstores: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(intstores)
    assert len(found) == 1
    return found


def test_int_members_size_their_repeats(sites_of, intstores, expected):
    assert sites_of(intstores, ENTRY, "cuda") == expected


def test_broken_variant_no_int_arithmetic(sites_of, intstores, expected, line_of, monkeypatch):
    monkeypatch.setattr(callgraph, "_INT_ARITHMETIC", ())
    runner = intstores / "heads_runner.py"
    repeat = (runner.name, line_of(runner, "never: an int repeat"), "blocking_readback", "none")
    assert sites_of(intstores, ENTRY, "cuda") == expected | {repeat}

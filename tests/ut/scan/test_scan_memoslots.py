"""A dict an object memoises values in by key (vllm-ascend's DSA builder keeps the first build's
prefill query starts in ``self.<cache>["<key>"]`` and the next build of the step reads them
back): a read ``self.memo["k"]`` lives where the class's stores under that key put the value,
not where the dict itself does (a host object). Fixture: tests/data/scan/memoslots. The broken
variant (no memo slots: the read takes the dict's place, the engine before this rule) loses
the readback after the branch; the host count under another key stays no readback."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import values

ENTRY = ["MemoModelRunner.execute_model"]


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "memoslots" / "memo_runner.py"


@pytest.fixture
def reported(sites_of):
    return lambda path: sites_of(path, ENTRY, "cuda")


def test_a_read_by_key_lives_where_the_class_stored_it(reported, runner, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 1
    assert reported(runner) == expected


def test_broken_variant_no_memo_slots(reported, runner, monkeypatch, expected_sites):
    monkeypatch.setattr(values.ValueModel, "_memo_slot",
                        lambda self, attr, key: values.Place.UNKNOWN)
    (site,) = expected_sites(runner)
    assert site not in reported(runner)

"""One-time work behind members: a member built on first use by a method the branch calls
(``if self.backend is None: self._build_backend()``) and a flag the branch sets, itself or
through a method (``if not self._logged: self._logged = True``), run once per process, so their
syncs are warm-up, not per step. Written after reading audits 5 and 6
(tests/data/scan/audit/flagged5.toml site 26, flagged6.toml sites 7 and 8: in sample there).
Fixture: tests/data/scan/firstuse. Broken variants: calls are not followed (the build method's
syncs fail), flags decide nothing (the one-time logs fail), a member set back by another method
still counts (the per-step flag passes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import guards


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "firstuse" / "first_use_runner.py"


def test_one_time_work_behind_members_is_warm_up(runner, sites_of, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 7
    assert sites_of(runner, [], "cuda") == expected


def _flipped(runner: Path, line_of, codes: list[str], was: str, now: str) -> tuple[set, set]:
    kinds = {"torch.tensor([1.0": "blocking_copy", "synchronize()": "device_sync"}
    lines = [(runner.name, line_of(runner, code),
              next((k for c, k in kinds.items() if c in code), "blocking_readback"))
             for code in codes]
    return {(*line, was) for line in lines}, {(*line, now) for line in lines}


def test_broken_variant_called_methods_build_nothing(runner, sites_of, expected_sites,
                                                     monkeypatch, line_of):
    monkeypatch.setattr(guards, "_method", lambda chain, name: None)
    lost, gained = _flipped(runner, line_of, [
        'torch.tensor([1.0, 2.0], device="cuda")', "synchronize()  # expect: device_sync warmup",
        "self.codes[0].item()"], "warmup", "none")
    assert sites_of(runner, [], "cuda") == expected_sites(runner) - lost | gained


def test_broken_variant_flags_decide_nothing(runner, sites_of, expected_sites, monkeypatch,
                                             line_of):
    monkeypatch.setattr(guards.GuardEvaluator, "_set_once", lambda self, node: False)
    lost, gained = _flipped(runner, line_of, ["self.codes.max().item()", "self.codes[0].item()"],
                            "warmup", "none")
    assert sites_of(runner, [], "cuda") == expected_sites(runner) - lost | gained


def test_broken_variant_members_set_back_still_count(runner, sites_of, expected_sites,
                                                     monkeypatch, line_of):
    monkeypatch.setattr(guards, "_set_back", lambda cls: frozenset())
    lost, gained = _flipped(runner, line_of, ["self.codes.sum().item()"], "none", "warmup")
    assert sites_of(runner, [], "cuda") == expected_sites(runner) - lost | gained

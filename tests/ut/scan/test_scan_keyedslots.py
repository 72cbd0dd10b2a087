"""Dicts filled by a computed key: an element of ``self.static_inputs[size]`` (or
``self.graphs.get(size)``) lives where the class's stores by key put it
(``self.static_inputs[size] = torch.empty(..., device=...)``), not where the empty display
(``{}``) the dict started as says. Written after reading audits 5 and 6
(tests/data/scan/audit/flagged5.toml sites 9 and 15, flagged6.toml site 12: device-to-device
copies into CUDA-graph static inputs judged device-to-host; in sample there). Fixture:
tests/data/scan/keyedslots. Broken variants: stores by key say nothing (the copies into static
device inputs fail, the empty display reading as host data); stores by key decide a device
tensor's own elements too (a readback of one passes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import values
from vllm_syncgate.scan.sources import is_self_attribute
from vllm_syncgate.scan.values import Place


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "keyedslots" / "keyed_slots_runner.py"


def test_keyed_slots_live_where_their_stores_put_them(runner, sites_of, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 2
    assert sites_of(runner, [], "cuda") == expected


def test_broken_variant_stores_by_key_say_nothing(runner, sites_of, expected_sites,
                                                  monkeypatch, line_of):
    monkeypatch.setattr(values.ValueModel, "_keyed_element", lambda self, container: Place.UNKNOWN)
    wrong = {(runner.name, line_of(runner, code), "blocking_copy", "none")
             for code in ("self.static_inputs[num_tokens].copy_", 'entry["static"].copy_')}
    assert sites_of(runner, [], "cuda") == expected_sites(runner) | wrong


def test_broken_variant_stores_decide_a_device_tensors_elements(runner, sites_of, expected_sites,
                                                                monkeypatch, line_of):
    def any_container(self, container):
        return self._memo_slot(container.attr, values.ANY_KEY) if is_self_attribute(
            container) else Place.UNKNOWN

    monkeypatch.setattr(values.ValueModel, "_keyed_element", any_container)
    lost = (runner.name, line_of(runner, "self.positions[num_tokens].item()"),
            "blocking_readback", "none")
    assert sites_of(runner, [], "cuda") == expected_sites(runner) - {lost}

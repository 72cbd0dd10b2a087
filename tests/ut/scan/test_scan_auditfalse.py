"""Three false alarms of the second precision audit (tests/data/scan/audit/flagged2.toml, its
not_sync sites of index 5, 26 and 18) are quiet, and the real syncs next to them still fail: a list of
device index tensors indexes like a tuple of them (``logprobs[[rows, cols]]``: no upload), an
attribute the class only sets to an ``int`` parameter sizes ``repeat_interleave``, and
``not isinstance(x, torch.Tensor)`` of an ``x`` just made a tensor is never taken (its copy
is reported guarded, not failing). Fixture:
tests/data/scan/auditfalse. Broken variants: each rule removed brings its false alarm back."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import guards, values

ENTRY: list[str] = []
STAGE = "talker_stage.py"


@pytest.fixture
def auditfalse(scan_data: Path) -> Path:
    return scan_data / "auditfalse"


@pytest.fixture
def expected(auditfalse: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(auditfalse)
    assert len(found) == 4
    return found


def _line(auditfalse: Path, text: str, kind: str) -> tuple[str, int, str, str]:
    lines = (auditfalse / STAGE).read_text().splitlines()
    (number,) = [n for n, t in enumerate(lines, start=1) if text in t]
    return (STAGE, number, kind, "none")


def test_false_alarms_quiet_real_syncs_fail(sites_of, auditfalse, expected):
    assert sites_of(auditfalse, ENTRY, "cuda") == expected


def test_broken_variant_list_of_index_tensors(sites_of, auditfalse, expected, monkeypatch):
    monkeypatch.setattr(values.ValueModel, "tensor_list", lambda self, node: False)
    back = _line(auditfalse, "logprobs[[rows, cols]]", "blocking_copy")
    assert sites_of(auditfalse, ENTRY, "cuda") == expected | {back}


def test_broken_variant_int_attributes(sites_of, auditfalse, expected, monkeypatch):
    monkeypatch.setattr(values.ValueModel, "int_attribute", lambda self, attr: False)
    back = _line(auditfalse, "self.token_mel_ratio, dim=1", "blocking_readback")
    assert sites_of(auditfalse, ENTRY, "cuda") == expected | {back}


def test_broken_variant_settled_type_tests(sites_of, auditfalse, expected, monkeypatch):
    monkeypatch.setattr(guards.GuardEvaluator, "_settled_tensor", lambda self, test: False)
    back = _line(auditfalse, "torch.as_tensor(embeds, device", "blocking_copy")
    dead = (*back[:3], "opt_in")  # the branch no longer judged dead: the copy runs by default
    assert sites_of(auditfalse, ENTRY, "cuda") == (expected - {dead}) | {back}

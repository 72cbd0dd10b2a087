"""Residence by dataflow from the call sites (issue 20 item 3), on a runner of our own
(tests/data/scan/callsites): a helper's parameter lives where its callers' arguments live,
through the locals derived from it (``q = start.to(dtype=...)``, ``q[1:] - q[:-1]``), also
the destination of ``x.to(device=t.device)``; a
builder's metadata record has the residence of what the runner stores in each field; a field
of such a record that no caller's dataflow reaches is a device tensor unless its name or
annotation says host. Each part is broken on purpose and shown to lose its lines.

Markers: ``# expect: KIND GUARD FAMILY``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, rules, values
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.config import Patterns, load_config
from vllm_syncgate.scan.values import Pin, Place

ENTRY = ["CsModelRunner.execute_model"]


@pytest.fixture
def callsites(scan_data: Path) -> Path:
    return scan_data / "callsites" / "cspkg"


def _config(**changes):
    config = load_config()
    defaults = Patterns((*config.default_implementations.globs, "CsAttentionMetadataBuilder"))
    return dataclasses.replace(config, default_implementations=defaults, **changes)


def _scan(root: Path, **changes):
    return scan([str(root / "v1" / "worker")], entries=ENTRY, config=_config(**changes))


def _reported(root: Path, **changes) -> set[tuple[str, int, str, str]]:
    return {(Path(f.file).name, f.line, f.kind, f.guard) for f in _scan(root, **changes).findings}


def test_callsites_fixture_reports_exactly_the_marked_sites(callsites, marked_families):
    expected = marked_families(callsites)
    assert set(expected.values()) == {"derived", "record", "record_default", "target"}
    assert _reported(callsites) == set(expected)


def test_a_failing_readback_names_the_caller_or_the_record(callsites):
    reasons = {(Path(f.file).name, f.line): f.reason for f in _scan(callsites).failing}
    assert reasons[("spans.py", 17)].startswith("CsModelRunner.execute_model (line 30)")
    assert "'common_attn_metadata.query_start_loc'" in reasons[("builder.py", 12)]
    assert "device field of CsCommonAttentionMetadata" in reasons[("spans.py", 22)]


def _no_locals(monkeypatch):
    monkeypatch.setattr(values.ValueModel, "bound", lambda self, name: None)
    _no_stored_fields(monkeypatch)


def _no_stored_fields(monkeypatch):
    """What every construction of a record stores in a field (test_scan_residence.py) says
    the same as the caller's record here: the parts below are broken with it off."""
    monkeypatch.setattr(callgraph._StoredFields, "__call__",
                        lambda self, name: (Place.UNKNOWN, Pin.UNKNOWN))


def _no_callers_record(monkeypatch):
    monkeypatch.setattr(callgraph, "_stored", lambda *a: None)
    _no_stored_fields(monkeypatch)


# Each part broken on purpose: a marked line it must lose (or a host read it must now report).
BROKEN = {
    # locals not followed back to the parameter: a field read through a local has no caller
    # to ask, its residence is unknown
    "locals derived from a parameter": (_no_locals, {}, ("builder.py", 12, "blocking_readback",
                                                         "unknown_residence")),
    # what the runner stores in the record not read: the device starts are of unknown
    # residence (no failure) and the pinned positions become a finding
    "the caller's record": (_no_callers_record, {},
                            ("builder.py", 12, "blocking_readback", "unknown_residence")),
    # no record class known: its device field is of unknown residence, not a failure
    "device records": (_no_stored_fields, {"device_records": Patterns(())},
                       ("spans.py", 22, "blocking_readback", "unknown_residence")),
    # the copy's destination not taken from the callers: x.to(device=t.device) with only host
    # t passed is taken for an upload
    "the destination's callers": (
        lambda m: m.setattr(rules.FunctionWalker, "_target_param", lambda self, node: ""), {},
        ("spans.py", 29, "blocking_copy", "none")),
}


@pytest.mark.parametrize("part", sorted(BROKEN))
def test_a_broken_part_fails_the_callsites_fixture(callsites, marked_families, monkeypatch, part):
    breaks, changes, wrong = BROKEN[part]
    breaks(monkeypatch)
    reported = _reported(callsites, **changes)
    assert reported != set(marked_families(callsites)), part
    assert wrong in reported, (part, reported)

"""Residence by dataflow where names say nothing (issue 20 item 3), on a plugin tree of our own
(tests/data/scan/residence): the forward context's metadata records (``get_forward_context()
.attn_metadata[layer]``: device fields unless annotation or name says host), a parameter
rebound to a conversion of itself (``cu = cu.to(torch.int64)``) still asks its callers, a
helper's result judged for each call's arguments (``_pad(x, cu.cpu())`` hands back a host
tensor made ``device=cu.device``), a record field holding what the builders' constructions
store in it (a host chunk-length tensor read by the impl), and a builder's attribute copied
through a cache dict keeping its device residence; a readback under a None test of its host
copy (``if cu_seqlens_host is None: cu_seqlens_host = tuple(cu_seqlens.tolist())``) is the
fallback, not the default path; a device record handed back by a helper (its methods' results
and its own fields read by them on the device), literal operands that say nothing about where a
comparison lives (``lengths > 0``), integer helpers (``triton.cdiv``) and a helper's pinning
judged for the call's host arguments (offsets built on the host are pageable, their upload
blocks). Each part is broken on purpose and shown to
lose its lines (or to report a host read as a sync).

Markers: ``# expect: KIND GUARD FAMILY``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, values
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.config import Patterns, load_config
from vllm_syncgate.scan.values import Pin, Place

ENTRIES = ["RsdLinearAttention._forward_core", "RsdLatentImpl.forward",
           "RsdLatentMetadataBuilder.build", "RsdSparseMetadataBuilder.build",
           "RsdGatedMetadataBuilder.build", "RsdGatedLayer._forward_core"]


@pytest.fixture
def residence(scan_data: Path) -> Path:
    return scan_data / "residence" / "rsdpkg"


def _scan(root: Path, **changes):
    config = dataclasses.replace(load_config(), **changes)
    return scan([str(root)], entries=ENTRIES, config=config)


def _reported(root: Path, **changes) -> set[tuple[str, int, str, str]]:
    return {(Path(f.file).name, f.line, f.kind, f.guard) for f in _scan(root, **changes).findings}


def _line(root: Path, file: str, text: str) -> int:
    lines = next(root.rglob(file)).read_text().splitlines()
    return next(number for number, line in enumerate(lines, start=1) if text in line)


def test_residence_fixture_reports_exactly_the_marked_sites(residence, marked_families):
    expected = marked_families(residence)
    assert set(expected.values()) == {"context", "returned", "stored", "copies", "twin",
                                      "ownfields", "records", "literals", "hostops"}
    assert _reported(residence) == set(expected)


def test_a_readback_through_the_forward_context_names_the_layer(residence):
    reasons = {(Path(f.file).name, f.line): f.reason for f in _scan(residence).failing}
    bounds = _line(residence, "chunked.py", "bounds = cu_seqlens.tolist()")
    assert reasons[("chunked.py", bounds)].startswith("RsdLinearAttention._forward_core")


_judged_pin = callgraph._ReturnPlaces.pin


def _pin_without_caller(self, context, call, caller=None):  # type: ignore[no-untyped-def]
    return _judged_pin(self, context, call, None)


# Each part broken on purpose: the marked families it must lose.
LOST = {
    # the forward context's attn_metadata not known to hold device records: the layer's reads
    # and the kernel wrapper's readbacks of what it passes are of unknown residence (and a
    # field no construction settles is no longer a device record's)
    "forward context records": (lambda m: None, {"context_records": ()},
                                {"context", "literals"}),
    # a parameter rebound to its own conversion no longer asks its callers
    "parameters converted in place": (
        lambda m: m.setattr(values.ValueModel, "_converted_in_place", lambda self, name: False),
        {}, {"context"}),
    # what the builders store in a record's field not read: the impl's upload of the host chunk
    # lengths looks like one of unknown residence and pinning
    "fields stored by constructions": (
        lambda m: m.setattr(callgraph._StoredFields, "__call__",
                            lambda self, name: (Place.UNKNOWN, Pin.UNKNOWN)), {}, {"stored"}),
    # a builder's slot copied through its cache dict: its other store no longer settles it
    "copies between self slots": (lambda m: m.setattr(callgraph, "_settle_copies",
                                                      lambda *a: {}), {}, {"copies"}),
    # the fallback under `if cu_seqlens_host is None` taken for the default path: it fails
    "host-copy fallbacks": (lambda m: m.setattr(callgraph, "_tests_host_twin", lambda *a: False),
                            {}, {"twin"}),
    # a device record's own method reading its fields as the runners' attributes of that name
    "a record's own fields": (
        lambda m: m.setattr(values.ValueModel, "_in_device_record", lambda self: False), {},
        {"ownfields"}),
    # a helper's record-typed result not taken for a device record: the record's method result
    # and the mask derived from it are of unknown residence (the record's own method is still
    # reached: the helper's return annotation types the local it is called on)
    "records returned by helpers": (
        lambda m: m.setattr(callgraph._ReturnPlaces, "_returns_device_record",
                            lambda self, target: False), {}, {"records"}),
    # a literal operand voting for the host: `lengths > 0` of an unknown value is a host mask
    "literal operands": (
        lambda m: m.setattr(values.ValueModel, "_operands",
                            lambda self, nodes: [self.place(n) for n in nodes]), {},
        {"literals"}),
    # a helper's pinning not judged for the call's host arguments: the offsets it builds on
    # the host are of unknown pinning, their upload of unknown cost
    "helpers' pinning per call": (
        lambda m: m.setattr(callgraph._ReturnPlaces, "pin", _pin_without_caller), {},
        {"hostops"}),
    # cdiv() not known as integer arithmetic: the chunk counts are of unknown residence
    "arithmetic helpers": (lambda m: None, {"arithmetic": Patterns(())}, {"hostops"}),
}


@pytest.mark.parametrize("part", sorted(LOST))
def test_a_broken_part_loses_its_lines(residence, lost_families, monkeypatch, part):
    breaks, changes, lost = LOST[part]
    breaks(monkeypatch)
    assert lost_families(residence, _reported(residence, **changes)) == lost


def test_helper_results_judged_per_call_keep_host_reads_quiet(residence, monkeypatch):
    """Without the call's arguments, the helper's tensor made ``device=cu_seqlens.device`` is
    taken for a device tensor at every call: the host copy's reads become syncs."""
    widths = ("chunked.py", _line(residence, "chunked.py", "widths = cu_kernel.tolist()"),
              "blocking_readback", "none")
    count = ("chunked.py", _line(residence, "chunked.py", "total += int("), "blocking_readback",
             "none")
    assert not {widths, count} & _reported(residence)
    monkeypatch.setattr(callgraph, "_passed", lambda *a: lambda param: Place.UNKNOWN)
    assert {widths, count} <= _reported(residence)


def test_the_cache_configs_block_count_is_a_host_int(scan_data):
    """``min(n, self.cache_config.num_gpu_blocks)`` compares two ints; with the name read as a
    GPU buffer's (``*_gpu_*``), ``min()`` would be taken for a readback of a tensor."""
    runner = scan_data / "residence" / "block_counts.py"
    assert not scan([str(runner)], entries=[]).findings
    config = load_config()
    host = Patterns(tuple(g for g in config.host.globs if g != "num_gpu_blocks"))
    broken = scan([str(runner)], entries=[], config=dataclasses.replace(config, host=host))
    assert [f.api for f in broken.failing] == ["min() of a tensor"]

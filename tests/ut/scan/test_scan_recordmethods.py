"""Methods of a parameter's scanned class (issue 20 item 3; vLLM 0.19.1's MLA builder read
``common_attn_metadata.compute_num_computed_tokens().cpu()`` back every prefill step): the
result of ``meta.method()`` where ``meta`` is annotated with a scanned class is what that
method returns, judged in the record's context (a device record's fields are on the device).
Fixture: tests/data/scan/recordmethods. The broken variant loses the marked line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph

ENTRY = ["ChunkModelRunner.execute_model"]


@pytest.fixture
def records(scan_data: Path) -> Path:
    return scan_data / "recordmethods"


@pytest.fixture
def reported(sites_of):
    return lambda path: sites_of(path, ENTRY, "cuda")


def test_a_device_result_of_the_records_method_fails_at_the_marked_line(reported, records,
                                                                       expected_sites):
    expected = expected_sites(records)
    assert len(expected) == 1
    assert reported(records) == expected


def test_broken_variant_a_parameters_method_left_unresolved(reported, records, monkeypatch,
                                                            expected_sites):
    original = callgraph._ReturnPlaces._target

    def target(self, caller, call: ast.Call):
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id != "self":
            return None  # as before: only module functions and self's methods
        return original(self, caller, call)

    monkeypatch.setattr(callgraph._ReturnPlaces, "_target", target)
    (site,) = expected_sites(records)
    assert site not in reported(records)

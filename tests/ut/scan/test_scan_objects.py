"""Objects are not tensors: a method torch.Tensor does not have (``tables[gid].host_array()``)
is called on an object, so where its result lives is that method's business, not the
receiver's, where the scan can follow the method (the one scanned method of that name). Before,
a chain read through a field whose name the attention records also use for a device tensor
(``batch.block_table``) made every method result on it a device tensor, and an element of the
host block table read with ``int()`` failed (audit 4 sites 6 and 8, in sample). An object method
that returns device rows still reads back, and one the scan cannot follow keeps the receiver's
place (a device record's ``computed_tokens()``, fixture residence). Fixture:
tests/data/scan/objects. Broken variants: every method counts as a tensor method, or the method
is not followed: the host array fails again either way."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, values
from vllm_syncgate.scan.sources import SourceIndex


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "objects" / "object_runner.py"


def test_object_methods_decide_where_their_results_live(runner, sites_of, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 2
    assert sites_of(runner, [], "cuda") == expected


def test_broken_variant_every_method_is_a_tensor_method(runner, sites_of, expected_sites,
                                                        monkeypatch, line_of):
    for module in (values, callgraph):
        monkeypatch.setattr(module, "tensor_or_container_method", lambda method: True)
    host = (runner.name, line_of(runner, "int(table[0, 1])"), "blocking_readback", "none")
    assert sites_of(runner, [], "cuda") == expected_sites(runner) | {host}


def test_broken_variant_the_object_method_is_not_followed(runner, sites_of, expected_sites,
                                                          monkeypatch, line_of):
    """Unfollowed, the method says nothing, the receiver's place stands and the host array
    fails again, while the device rows still fail through the receiver."""
    monkeypatch.setattr(SourceIndex, "only_method", lambda self, name: None)
    host = (runner.name, line_of(runner, "int(table[0, 1])"), "blocking_readback", "none")
    assert sites_of(runner, [], "cuda") == expected_sites(runner) | {host}


def test_the_tensor_method_table_is_the_installed_torchs():
    torch = pytest.importorskip("torch")
    text = (resources.files("vllm_syncgate") / "scan" / "tensor_methods.toml").read_text()
    written = tomllib.loads(text)["methods"]
    assert written == sorted(n for n in dir(torch.Tensor) if not n.startswith("_"))

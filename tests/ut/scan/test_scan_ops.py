"""The ops a model family's builder calls every step (issue 20 item 2), on a runner of our own
(tests/data/scan/ops): a gated-delta-net builder calls its chunk ops, one imported with the
module, one imported inside the function that calls it. An op module is parsed only when a
call reaches it (an ops package is never read whole). Each part is broken on purpose and shown
to lose the lines its family tag names.

Markers: ``# expect: KIND GUARD FAMILY``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import sources, values
from vllm_syncgate.scan.callgraph import _scan, scan
from vllm_syncgate.scan.config import load_config
from vllm_syncgate.scan.sources import FileBudget

ENTRY = ["OpsModelRunner.execute_model"]


@pytest.fixture
def ops(scan_data: Path) -> Path:
    return scan_data / "ops" / "opspkg"


def _reported(root: Path) -> set[tuple[str, int, str, str]]:
    result = scan([str(root / "v1" / "worker")], entries=ENTRY)
    return {(Path(f.file).name, f.line, f.kind, f.guard) for f in result.findings}


def test_ops_fixture_reports_exactly_the_marked_sites(ops, marked_families):
    expected = marked_families(ops)
    assert set(expected.values()) == {"op", "local_import", "to_param"}
    assert _reported(ops) == set(expected)


def test_an_op_is_read_only_when_a_call_reaches_it(ops):
    _result, read = _scan([str(ops / "v1" / "worker")], ENTRY, [], load_config(), FileBudget())
    names = {path.name for path in read}
    assert {"index.py", "cumsum.py"} <= names
    assert "unused.py" not in names  # in the ops package, called by nobody


def test_the_host_caller_of_an_op_is_not_a_finding(ops):
    """chunk_indices is called twice: with the host query_start_loc_cpu and with the device
    buffer; only the device caller's path makes its readback fail."""
    result = scan([str(ops / "v1" / "worker")], entries=ENTRY)
    reached = [f for f in result.findings if f.qualname == "chunk_indices"]
    assert len({(f.line, f.guard) for f in reached}) == 1


BROKEN = {
    # op modules never parsed: the builder's calls into them resolve to nothing
    "ops parsed on first call": (
        lambda m: m.setattr(sources, "_op_loader", lambda *a: (lambda _name: None)),
        {"op", "local_import"}),
    # imports inside a function not read: the op imported where it is called is unknown
    "function-level imports": (
        lambda m: m.setattr(sources, "_read_nested_imports", lambda _m: None), {"local_import"}),
    # x.to(param) taken for a move to the device: the host table's readback fails the gate
    "to() a parameter's device": (
        lambda m: m.setattr(values, "to_parameter", lambda *a: False), {"to_param"}),
}


@pytest.mark.parametrize("family", sorted(BROKEN))
def test_a_broken_part_fails_the_ops_fixture(ops, lost_families, monkeypatch, family):
    breaks, lost = BROKEN[family]
    breaks(monkeypatch)
    assert lost_families(ops, _reported(ops)) == lost, family


def test_installed_vllm_reads_only_the_ops_its_builders_reach(vllm_worker_dir):
    """The GDN builder's chunk bookkeeping (FLA's prepare_chunk_indices, called with the host
    query_start_loc_cpu) is reached and read; an attention op no reached function calls is not
    parsed."""
    result, read = _scan([str(vllm_worker_dir)], [], [], load_config(), FileBudget())
    shown = {str(path).split("site-packages/")[-1] for path in read}
    assert "vllm/third_party/flash_linear_attention/ops/index.py" in shown
    assert "vllm/v1/attention/ops/triton_decode_attention.py" not in shown
    reached = [f for f in result.findings if f.qualname == "prepare_chunk_indices"]
    assert reached
    assert not any(f.gates for f in reached)

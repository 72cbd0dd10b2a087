"""The model forward's per-step code is followed (issue 20 item 2), on a plugin tree of our own
(tests/data/scan/forward): the default backend's attention impl (``get_impl_cls()``), an
out-of-tree op (a CustomOp subclass: the budget's ``dispatch`` says which method the device
runs), a plugin's subclass of a model layer it registers in the layer's place, a plugin's
patch of a model layer's ``_forward_core``, and the kernel wrapper that patch
calls through an autograd Function's ``apply`` (an op module parsed on first call). Their syncs
fail the gate; the context-parallel impl, an opt-in branch and a speculation branch stay
guarded. The runner reaches none of them by name (``self.model(...)``), so the scanner before
this change reported none of them. Each part is broken on purpose and shown to lose the lines
its family tag names.

Markers: ``# expect: KIND GUARD FAMILY``; family ``cuda_op`` is what a CUDA device runs instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vllm_syncgate.audit.budgets import builtin_budget_path, load_budgets, parse_budgets
from vllm_syncgate.errors import BudgetError
from vllm_syncgate.scan import callgraph, rules, sources
from vllm_syncgate.scan.callgraph import scan


@pytest.fixture
def forward(scan_data: Path) -> Path:
    return scan_data / "forward" / "fwd_ascend"


def _dispatch(device: str) -> tuple[str, ...]:
    return load_budgets(builtin_budget_path(device)).dispatch


def _scan(root: Path, device: str = "npu", **kwargs):
    # the runner, the patches, two op modules and the opt-in backend are named; the default
    # backend comes through the runner's import of the attention package, the kernel wrapper
    # through the patch's call
    paths = [str(root / "worker"), str(root / "patch"), str(root / "ops" / "layernorm.py"),
             str(root / "ops" / "gdn.py"), str(root / "attention" / "attention_cp.py")]
    return scan(paths, dispatch=kwargs.pop("dispatch", _dispatch(device)), **kwargs)


def _reported(root: Path, device: str = "npu", **kwargs) -> set[tuple[str, int, str, str]]:
    return {(Path(f.file).name, f.line, f.kind, f.guard) for f in _scan(root, device, **kwargs).findings}


def _marked(root: Path, marked_families, *, without: str) -> dict[tuple[str, int, str, str], str]:
    return {site: family for site, family in marked_families(root).items() if family != without}


def test_forward_fixture_reports_exactly_the_marked_sites_on_an_npu(forward, marked_families):
    expected = _marked(forward, marked_families, without="cuda_op")
    assert set(expected.values()) == {"impl", "cp_impl", "op", "patch", "helper", "layer"}
    assert _reported(forward) == set(expected)
    failing = {(Path(f.file).name, f.qualname) for f in _scan(forward).failing}
    assert failing == {
        ("attention_v1.py", "AscendAttentionBackendImpl._forward_prefill"),
        ("layernorm.py", "AscendRMSNorm.forward_oot"),
        ("patch_gdn.py", "AscendGatedDeltaNet._forward_core"),
        ("chunk.py", "chunk_delta_fwd"),
        ("gdn.py", "AscendGatedDeltaNetAttention._forward_core"),
    }


def test_the_budget_decides_which_op_method_runs(forward, marked_families):
    """The cuda budget dispatches to forward_cuda: its sync fails there and forward_oot's
    sites are not reached (the same tree, another device)."""
    marked = marked_families(forward)
    cuda = _reported(forward, "cuda")
    by_family = {family: {s for s, f in marked.items() if f == family} for family in set(marked.values())}
    assert by_family["cuda_op"] <= cuda
    assert not by_family["op"] & cuda
    assert not by_family["cuda_op"] & _reported(forward, "npu")


def test_the_scanner_without_forward_roots_reports_none_of_the_default_sites(
        forward, marked_families, monkeypatch):
    """What the scan did before (the runner's step only; also checked on dde85ec by hand)."""
    monkeypatch.setattr(callgraph._Analysis, "forward_roots", lambda self: [])
    defaults = {s for s in marked_families(forward) if s[3] == "none"}
    assert len(defaults) == 6
    assert not defaults & _reported(forward)


def test_named_entries_replace_the_forward_roots(forward):
    result = _scan(forward, entries=["NPUModelRunner.execute_model"])
    assert result.entries == ["fwd_ascend.worker.model_runner_v1:NPUModelRunner.execute_model"]
    assert not result.findings


def test_only_the_forward_methods_a_patch_installs_are_roots(forward):
    entries = _scan(forward).entries
    assert "fwd_ascend.patch.worker.patch_gdn:AscendGatedDeltaNet._forward_core" in entries
    assert not [e for e in entries if e.endswith("get_state_dtype")]


_resolve = callgraph._Analysis._resolve


def _without_apply(self, ctx, function, call):
    return [] if call.how == "apply" else _resolve(self, ctx, function, call)


BROKEN = {
    # no dispatch in the budget: an op class's per-platform method is never a root
    "budget dispatch": (lambda m: None, {"dispatch": ()}, {"op"}),
    # backend.get_impl_cls() not read: no attention impl is a root
    "impl roots": (lambda m: m.setattr(callgraph, "_returned_classes", lambda *a: []), {},
                   {"impl", "cp_impl"}),
    # Target._forward_core = Local._forward_core not read: the patch and what it calls are lost
    "patched methods": (lambda m: m.setattr(callgraph, "_patched_methods", lambda *a: []), {},
                        {"patch", "helper"}),
    # a plugin's subclass of an unscanned model layer not taken for the layer it replaces
    "layer overrides": (
        lambda m: m.setattr(callgraph._Analysis, "_layer_override", lambda self, cls: False), {},
        {"layer"}),
    # Fn.apply(...) not followed into the autograd Function's forward: the wrapper is unreached
    "autograd apply": (
        lambda m: m.setattr(callgraph._Analysis, "_resolve", _without_apply), {}, {"helper"}),
    # op modules never parsed: the kernel wrapper the patch calls is unknown
    "ops parsed on first call": (
        lambda m: m.setattr(sources, "_op_loader", lambda *a: (lambda _name: None)), {},
        {"helper"}),
}


@pytest.mark.parametrize("part", sorted(BROKEN))
def test_a_broken_part_fails_the_forward_fixture(forward, marked_families, monkeypatch, part):
    breaks, kwargs, lost = BROKEN[part]
    breaks(monkeypatch)
    expected = _marked(forward, marked_families, without="cuda_op")
    reported = _reported(forward, **kwargs)
    assert {expected[s] for s in set(expected) - reported} == lost, part


def test_an_int_repeats_held_in_a_name_sizes_repeat_interleave(forward, monkeypatch):
    """``torch.repeat_interleave(x, repeats, dim=0)`` with ``repeats := self.per_kv`` (set to a
    floor division of head counts) reads nothing back; taken for a tensor, it would fail."""
    line = next(n for n, text in enumerate((forward / "ops" / "gdn.py").read_text().splitlines(), 1)
                if text.endswith("# int repeats"))
    assert not [f for f in _scan(forward).findings if f.file.endswith("gdn.py") and f.line == line]
    monkeypatch.setattr(rules.FunctionWalker, "_int_valued",
                        lambda self, node, depth=0: isinstance(node, ast.Constant))
    assert [f for f in _scan(forward).failing if f.file.endswith("gdn.py") and f.line == line]


def test_an_int_annotated_repeats_sizes_repeat_interleave(forward, monkeypatch):
    """``states.repeat_interleave(times, dim=0)`` in a helper whose ``times: int`` is a count
    (the Gaudi sampler's ``num_samples``) reads nothing back; taken for a tensor, it fails."""
    line = next(n for n, text in enumerate((forward / "ops" / "gdn.py").read_text().splitlines(), 1)
                if text.endswith("# int-annotated repeats"))
    assert not [f for f in _scan(forward).findings if f.file.endswith("gdn.py") and f.line == line]
    monkeypatch.setattr(rules.FunctionWalker, "_int_parameter", lambda self, name: False)
    assert [f for f in _scan(forward).failing if f.file.endswith("gdn.py") and f.line == line]


def test_a_budget_that_extends_another_inherits_its_dispatch():
    own = parse_budgets({"extends": "npu", "budget": []}, "mine.toml")
    assert own.dispatch == ("forward_oot", "forward_native")
    assert parse_budgets({"extends": "npu", "dispatch": ["forward_cpu"], "budget": []},
                         "mine.toml").dispatch == ("forward_cpu",)
    with pytest.raises(BudgetError, match="dispatch"):
        parse_budgets({"extends": "npu", "dispatch": "forward_oot", "budget": []}, "mine.toml")

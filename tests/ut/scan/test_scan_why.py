"""Issue 20's cases, on a runner of our own (tests/data/scan/why): the sync shapes upstream
developers removed, followed through the sampler and the drafters the runner imports, judged by
dataflow. Each rule family is also broken on purpose and shown to fail the fixture."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vllm_syncgate.audit.budgets import AllowRule
from vllm_syncgate.fakedev import syncing
from vllm_syncgate.scan import callgraph, guards, rules, sources, values
from vllm_syncgate.scan.callgraph import scan

ENTRY = ["WhyModelRunner.execute_model"]


@pytest.fixture
def why(scan_data: Path) -> Path:
    return scan_data / "why"


def _reported(result) -> set[tuple[str, int, str, str]]:
    return {(Path(f.file).name, f.line, f.kind, f.guard) for f in result.findings}


def _worker(root: Path) -> str:
    return str(root / "whypkg" / "worker")


def test_why_fixture_reports_exactly_the_marked_sites(why, expected_sites):
    """Only the worker package is named: sampler, rejection sampler and drafters come from its
    imports, and every marked line (each missed or misjudged before issue 20) is reported."""
    result = scan([_worker(why)], entries=ENTRY)
    expected = set().union(*(expected_sites(d) for d in sorted(why.rglob("*")) if d.is_dir()))
    assert len(expected) >= 17
    assert _reported(result) == expected


def test_the_failing_sites_name_their_reason(why):
    result = scan([_worker(why)], entries=ENTRY)
    by_line = {(Path(f.file).name, f.line): f for f in result.failing}
    helper = by_line[("why_model_runner.py", 99)]
    assert helper.reason.startswith("WhyModelRunner._bookkeeping (line 91) passes a device value")
    region = by_line[("why_model_runner.py", 94)]
    assert "gpu_sync_allowed()" in region.reason
    forward = by_line[("sampler.py", 15)]
    assert forward.path[-2:] == ("WhyModelRunner.execute_model", "Sampler.forward")
    drafts = {f.qualname for f in result.findings if f.guard == "speculation"}
    assert {"EagleProposer.propose", "NgramProposer.propose", "RejectionSampler.forward"} <= drafts


def test_the_correct_host_buffer_fix_passes(why, tmp_path):
    """Dataflow wins over the parameter's name both ways: ``.gpu[...]`` into ``token_ids_cpu``
    fails, the host half ``.cpu[...]`` passes."""
    tree = tmp_path / "why"
    shutil.copytree(why, tree)
    runner = tree / "whypkg" / "worker" / "why_model_runner.py"
    text = runner.read_text()
    broken = "self._num_tokens(self.input_ids.gpu[:n])"
    assert text.count(broken) == 1
    runner.write_text(text.replace(broken, "self._num_tokens(self.input_ids.cpu[:n])"))
    result = scan([_worker(tree)], entries=ENTRY)
    assert not [f for f in result.findings if f.qualname == "WhyModelRunner._num_tokens"]


def test_a_sync_in_a_gpu_sync_allowed_region_passes_only_by_a_rule_naming_it(why):
    site = "whypkg.worker.why_model_runner:WhyModelRunner._to_list"
    other = AllowRule(site="whypkg.worker.why_model_runner:WhyModelRunner._count",
                      reason="names another site", kind="event_sync")
    named = AllowRule(site=site, reason="the documented transfer wait", kind="event_sync")
    for allow, guard in (((), "none"), ((other,), "none"), ((named,), "allowed")):
        result = scan([_worker(why)], entries=ENTRY, allow=allow)
        wait = next(f for f in result.findings if f.symbol == site)
        assert wait.guard == guard
    # the new readback next to it in the same region still fails
    assert any(f.line == 94 for f in result.failing)


def test_the_scan_table_is_torchs_operator_tags():
    """One list: the scan's table is what the simulated accelerator derives from torch."""
    table = Path(rules.__file__).with_name("syncing_ops.toml").read_text()
    assert table == syncing.scan_table()
    names, sized_by = rules.syncing_ops()
    assert {"nonzero", "unique", "masked_select", "repeat_interleave"} <= names
    assert sized_by["repeat_interleave"] == "output_size"


def test_a_table_missing_a_tagged_operator_is_caught(monkeypatch):
    kept = tuple(op for op in syncing.data_dependent_overloads() if "nonzero" not in str(op))
    syncing.data_dependent_entry_points.cache_clear()
    monkeypatch.setattr(syncing, "data_dependent_overloads", lambda: kept)
    try:
        table = Path(rules.__file__).with_name("syncing_ops.toml").read_text()
        assert syncing.scan_table() != table
    finally:
        monkeypatch.undo()
        syncing.data_dependent_entry_points.cache_clear()


def test_opt_in_switches_come_from_the_installed_vllm_config():
    switches = guards.installed_opt_ins()
    if not switches:
        pytest.skip("vllm is not installed")
    assert {"enable_return_routed_experts", "VLLM_COMPUTE_NANS_IN_LOGITS"} <= switches
    assert "watermark_config" in switches  # a feature's config, None unless turned on
    assert "enable_return_routed_experts" not in " ".join(
        p for g in ("opt_in", "speculation") for p in getattr(
            callgraph.load_config(), g).globs)  # not from a name list


def _off(*_args, **_kwargs):
    return None


def _free_pass(value, guard=None):
    """The old rule: a gpu_sync_allowed() region guards everything in it."""
    return guards.Truth(False if guard is guards.Guard.ALLOWED else value, guard)


# Each rule family broken on purpose, and the fixture lines it alone reports.
BROKEN = {
    "host-to-device from pageable or strided memory": (
        lambda m: m.setattr(rules.FunctionWalker, "_host_to_device", _off), {59, 61, 67}),
    "torch.tensor(host data, device=)": (
        lambda m: m.setattr(rules.FunctionWalker, "_tensor_of_host_data", _off), {63}),
    "dtype-changing copies": (
        lambda m: m.setattr(values.ValueModel, "dtype", lambda *a: None), {65, 113}),
    "data-dependent operators": (
        lambda m: m.setattr(rules.FunctionWalker, "_data_dependent", _off), {74, 8, 10}),
    "boolean-mask indexing": (
        lambda m: m.setattr(values.ValueModel, "is_mask", lambda *a: False), {75, 15}),
    "arguments decide a parameter's residence": (
        lambda m: m.setattr(values.ValueModel, "derived", lambda *a: None), {99, 102}),
    "opt-in switches from vLLM's config": (
        lambda m: m.setattr(guards, "installed_opt_ins", frozenset), {85, 87}),
    "imports followed": (
        lambda m: m.setattr(sources, "_follow_imports", _off), {15, 8, 10, 11}),
    "strided views of pinned buffers": (
        lambda m: m.setattr(values.ValueModel, "contiguous", lambda *a: True), {67, 114}),
    # the cached table is built on every step once memoization is not recognised
    "a local first read from a cache": (
        lambda m: m.setattr(guards.GuardEvaluator, "_memoized", lambda *a: False), {29}),
    "gpu_sync_allowed() is no pass": (lambda m: m.setattr(rules, "Truth", _free_pass), {94, 108}),
    # the runner's pageable token_ids_cpu, unknown once HostScratch's pinned one is mixed in
    "allocation facts per class": (
        lambda m: m.setattr(values.ValueModel, "_owned", lambda *a: None), {71}),
}


@pytest.mark.parametrize("family", sorted(BROKEN))
def test_a_broken_rule_family_fails_the_fixture(why, expected_sites, monkeypatch, family):
    breaks, lines = BROKEN[family]
    guards.installed_opt_ins.cache_clear()
    breaks(monkeypatch)
    result = scan([_worker(why)], entries=ENTRY)
    expected = set().union(*(expected_sites(d) for d in sorted(why.rglob("*")) if d.is_dir()))
    reported = _reported(result)
    assert reported != expected
    missing = {line for _name, line, _kind, _guard in expected - reported}
    assert lines <= missing


def test_every_finding_says_why_it_blocks_citing_the_measurements(why):
    result = scan([_worker(why)], entries=ENTRY)
    for finding in result.findings:
        assert "gpu-physics.md §" in finding.why, (finding.api, finding.why)
    by_api = {f.api: f.why for f in result.findings}
    assert "depends on device values" in by_api["torch.unique"]
    assert "depends on device values" in by_api["Tensor.__getitem__(bool mask)"]
    assert "pageable" in by_api["Tensor.copy_ from a strided view"]
    assert "non_blocking does not help" in by_api["Tensor.to(device) from pageable"]


def test_followed_modules_keep_the_name_they_are_imported_by(why, tmp_path):
    """A tree extracted without its package markers: allow rules written for the full module
    names still match the sampler found through the imports."""
    tree = tmp_path / "why"
    shutil.copytree(why, tree)
    for marker in ("whypkg/__init__.py", "whypkg/sample/__init__.py"):
        (tree / marker).unlink()
    result = scan([_worker(tree)], entries=ENTRY)
    forward = next(f for f in result.findings if f.qualname == "Sampler.forward")
    assert forward.symbol == "whypkg.sample.sampler:Sampler.forward"

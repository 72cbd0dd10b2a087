"""The value model's locals are inferred with less work but the same answers: one pass when a
second would read nothing new, once per function for every value model of a scan phase."""

from __future__ import annotations

import ast
import textwrap

import pytest

from vllm_syncgate.scan import values
from vllm_syncgate.scan.config import load_config
from vllm_syncgate.scan.values import Facts, Place, ValueModel

# ``y`` is read above its binding (a loop): only a second pass sees it is a host tensor
LOOP = """
def carry(n):
    y = None
    for _ in range(n):
        if y is not None:
            z = y.sum()
        y = torch.zeros(4)
    return z
"""
STRAIGHT = """
def straight(n):
    y = torch.zeros(n)
    z = y.sum()
    return z
"""


def _function(source: str) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def _returned_place(model: ValueModel, function: ast.FunctionDef) -> Place:
    model.bind_function(function)
    returned = function.body[-1]
    assert isinstance(returned, ast.Return)
    assert returned.value is not None
    return model.place(returned.value)


@pytest.fixture
def passes(monkeypatch):
    """How many passes each inference of locals took (1: the second was not needed)."""
    taken: list[int] = []
    settled = ValueModel._settled

    def counting(self: ValueModel) -> bool:
        answer = settled(self)
        taken.append(1 if answer else 2)
        return answer

    monkeypatch.setattr(ValueModel, "_settled", counting)
    return taken


def test_straight_line_locals_take_one_pass(passes):
    model = ValueModel(load_config(), Facts())
    assert _returned_place(model, _function(STRAIGHT)) is Place.HOST
    assert passes == [1]


def test_a_local_read_above_its_binding_takes_the_second_pass(passes):
    model = ValueModel(load_config(), Facts())
    assert _returned_place(model, _function(LOOP)) is Place.HOST
    assert passes == [2]


def test_always_one_pass_is_a_broken_variant(monkeypatch):
    """The loop above tells the two apart: with one pass only, ``z`` stays unknown."""
    monkeypatch.setattr(ValueModel, "_settled", lambda self: True)
    model = ValueModel(load_config(), Facts())
    assert _returned_place(model, _function(LOOP)) is Place.UNKNOWN


@pytest.fixture
def inferred(monkeypatch):
    """Functions whose locals were inferred (not taken from the memo), in order."""
    names: list[str] = []
    infer = ValueModel._infer

    def counting(self: ValueModel, node: ast.FunctionDef) -> None:
        names.append(node.name)
        infer(self, node)

    monkeypatch.setattr(ValueModel, "_infer", counting)
    return names


def test_value_models_of_one_phase_infer_a_function_once(inferred):
    config, facts, function = load_config(), Facts(), _function(STRAIGHT)
    first = _returned_place(ValueModel(config, facts), function)
    assert _returned_place(ValueModel(config, facts), function) is first is Place.HOST
    assert inferred == ["straight"]
    # another phase (other facts), another way of judging it: inferred again
    _returned_place(ValueModel(config, Facts()), function)
    untrusting = ValueModel(config, facts)
    untrusting.trust_annotations = False
    _returned_place(untrusting, function)
    assert inferred == ["straight"] * 3


def test_locals_judged_for_one_call_or_past_a_cut_recursion_are_not_kept(inferred):
    config, facts, function = load_config(), Facts(), _function(STRAIGHT)
    for _ in range(2):
        per_call = ValueModel(config, facts)
        per_call.arguments = lambda param: Place.HOST
        _returned_place(per_call, function)
    assert inferred == ["straight"] * 2

    class CutReturns:
        """A helper's result that a recursion cut short (its judge was still in progress)."""

        def __call__(self, context: object, call: ast.Call, element: int | None,
                     caller: ValueModel | None = None) -> Place:
            facts.cuts += 1
            return Place.UNKNOWN

        def pin(self, context: object, call: ast.Call, caller: ValueModel | None = None
                ) -> values.Pin:
            return values.Pin.UNKNOWN

    helper = _function("def helper(n):\n    y = make(n)\n    return y\n")
    returns = CutReturns()
    for _ in range(2):
        _returned_place(ValueModel(config, facts, returns), helper)
    assert inferred == ["straight"] * 2 + ["helper"] * 2

"""The scan's speed shortcuts answer what the long way answers: prefix-tree patterns, the
class-line search, the setter walks that skip statements without a wanted call, the split of a
file into lines."""

from __future__ import annotations

import ast
import io
import random
import re
import textwrap

import pytest

from vllm_syncgate.scan import rules
from vllm_syncgate.scan.callgraph import _literals
from vllm_syncgate.scan.config import load_config
from vllm_syncgate.scan.guards import GuardEvaluator
from vllm_syncgate.scan.lines import python_lines
from vllm_syncgate.scan.rules import FunctionWalker, strongest
from vllm_syncgate.scan.sources import _CLASS_LINE, _class_lines
from vllm_syncgate.scan.values import Facts, ValueModel


def _samples(seed: int, alphabet: str, count: int, longest: int) -> list[str]:
    pick = random.Random(seed)
    return ["".join(pick.choice(alphabet) for _ in range(pick.randint(0, longest)))
            for _ in range(count)]


@pytest.mark.parametrize("seed", range(20))
def test_a_prefix_tree_pattern_matches_what_the_alternation_matches(seed):
    words = {w for w in _samples(seed, "ab(.", 8, 4) if w}
    tree, plain = re.compile(_literals(words)), re.compile("|".join(map(re.escape, words)))
    for text in _samples(seed + 100, "ab(.x", 200, 10):
        assert bool(tree.search(text)) == bool(plain.search(text)), (words, text)
        assert (tree.fullmatch(text) is None) == (plain.fullmatch(text) is None), (words, text)
    assert _literals([]) == ""  # no words: no pattern (an empty one would match anything)


def test_the_class_lines_are_those_finditer_gives():
    texts = [
        "class A(B):\n    x = 1\nclass C:\n    pass\n",
        "classify = 1\n  class D(E): pass\nclass F(\n    G,\n    H,\n):\n",
        "class A\nclass B(x)\n",  # a match that ends on the next line's start
        "x = 'class Z(Y)'\nclass",
        *_samples(7, "class AB()\n ,x", 300, 40),
    ]
    for text in texts:
        expected = [(m.span(), m.groups()) for m in _CLASS_LINE.finditer(text)]
        assert [(m.span(), m.groups()) for m in _class_lines(text)] == expected, text


SETTERS = """
def step(self, batch):
    if self.mode is None:
        return
    self.prepare(batch)
    for item in batch:
        if item.ready:
            self.helper.set_state(item)
    x = [self.other(i) for i in batch]
    if not self.use_async_scheduling:
        return
    run = partial(self.set_state, batch)
    with self.ctx():
        Holder(batch)
    def inner():
        self.set_state(None)
    try:
        pass
    except ValueError:
        self.set_state(1)
    return x
"""


def _wanted_calls(calling: frozenset[str]) -> list[tuple[str, str, int, str]]:
    config = load_config()
    walker = FunctionWalker(config, ValueModel(config, Facts()), GuardEvaluator(config, Facts()))
    node = ast.parse(textwrap.dedent(SETTERS)).body[0]
    assert isinstance(node, ast.FunctionDef)
    found = walker.walk(node, calls_only=True, calling=calling).calls
    return [(c.how, c.name, c.line, strongest(c.conditions).value) for c in found
            if c.name.rpartition(".")[2] in {"set_state", "Holder"}]


def test_the_setter_walk_skipping_other_statements_finds_the_same_calls():
    everything = _wanted_calls(frozenset())
    assert len(everything) == 5  # four set_state calls (one through partial), Holder()
    assert _wanted_calls(frozenset({"set_state", "Holder"})) == everything


def test_marking_only_the_outer_statements_is_a_broken_variant(monkeypatch):
    """A filter that forgets the statements nested in loops, branches and handlers loses the
    calls there: the comparison above tells it apart."""
    def outer_only(function: ast.FunctionDef, names: frozenset[str]) -> set[int]:
        return {id(s) for s in function.body
                if any(isinstance(n, ast.Call) and rules._called(n) in names for n in ast.walk(s))}

    everything = _wanted_calls(frozenset())
    monkeypatch.setattr(rules, "_calling", outer_only)
    assert _wanted_calls(frozenset({"set_state", "Holder"})) != everything


@pytest.mark.parametrize("breaks", ["\n", "\n\r", "\n\x0c\x1c\x85\u2028"])
def test_lines_split_at_newlines_alone_are_the_lines_python_numbers(breaks):
    """Without a carriage return the text is split at ``\\n``; with one, read as before."""
    for text in ["", "\n", "a", "a\n", "a\n\nb", *_samples(5, "ab " + breaks, 400, 12)]:
        expected = [line.rstrip("\r\n") for line in io.StringIO(text, newline="").readlines()]
        assert python_lines(text) == expected, repr(text)

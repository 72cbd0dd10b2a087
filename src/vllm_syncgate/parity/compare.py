"""Token-level comparison of two generations of the same prompt.

Two modes:

- **exact** (default on CPU, fp32): every token id must match. One differing id is a failure,
  reported at its index with both tokens and the text around it.
- **logprob** (for devices where kernels legitimately differ, e.g. bf16 on CUDA/NPU): the
  sequences may part ways at one *near tie*. At the first differing index both tokens must be in
  each other's top-k, the actual token must rank within ``max_rank`` of the reference's top-k, and
  the reference's logprob gap between the two tokens must be at most ``max_gap`` nats. After a
  tolerated flip nothing further is compared, because the continuations condition on different
  tokens. Anything else fails exactly as in exact mode.

A generation cut short by a stop string (``allow_truncated``) only has to be a prefix. A
generation that carries no logprobs cannot show a near tie itself: :func:`explained_by` finds the
same tolerated near tie in generations of the same prompt that do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Decode = Callable[[Sequence[int]], str]
TopLogprobs = Sequence[dict[int, float]]
CONTEXT_TOKENS = 6


@dataclass(frozen=True)
class Tolerance:
    """How far the logprob mode lets a first divergence go."""

    max_rank: int = 2
    max_gap: float = 0.1


@dataclass
class Divergence:
    """Where two generations first differ. A token of ``None`` means that side had ended."""

    index: int
    expected: int | None
    actual: int | None
    context: list[int] = field(default_factory=list)
    tolerated: bool = False
    note: str = ""
    text: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        where = f"token {self.index}: expected {_tok(self.expected)}, got {_tok(self.actual)}"
        if self.text:
            where += (
                f" after {self.text['context']!r} (expected {self.text['expected']!r},"
                f" got {self.text['actual']!r})"
            )
        if self.note:
            where += f" [{self.note}]"
        return where

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "expected": self.expected,
            "actual": self.actual,
            "context": self.context,
            "tolerated": self.tolerated,
            "note": self.note,
            "text": self.text,
        }


def _tok(token: int | None) -> str:
    return "<end>" if token is None else str(token)


def first_difference(expected: Sequence[int], actual: Sequence[int],
                     allow_truncated: bool = False) -> int | None:
    """Index of the first differing position, counting a length mismatch; ``None`` if equal."""
    for i, (a, b) in enumerate(zip(expected, actual, strict=False)):
        if a != b:
            return i
    if len(expected) == len(actual):
        return None
    if allow_truncated and len(actual) < len(expected):
        return None
    return min(len(expected), len(actual))


def _divergence(expected: Sequence[int], actual: Sequence[int], index: int,
                decode: Decode | None) -> Divergence:
    exp = expected[index] if index < len(expected) else None
    act = actual[index] if index < len(actual) else None
    context = list(expected[max(0, index - CONTEXT_TOKENS):index])
    div = Divergence(index=index, expected=exp, actual=act, context=context)
    if decode is not None:
        div.text = {
            "context": decode(context),
            "expected": "" if exp is None else decode([exp]),
            "actual": "" if act is None else decode([act]),
        }
    return div


def compare_exact(expected: Sequence[int], actual: Sequence[int], *,
                  allow_truncated: bool = False, decode: Decode | None = None) -> Divergence | None:
    """``None`` when ``actual`` equals ``expected`` (or is a prefix of it, if allowed)."""
    index = first_difference(expected, actual, allow_truncated)
    return None if index is None else _divergence(expected, actual, index, decode)


def compare_logprob(expected: Sequence[int], actual: Sequence[int], *,
                    expected_top: TopLogprobs, actual_top: TopLogprobs,
                    tolerance: Tolerance = Tolerance(), allow_truncated: bool = False,
                    decode: Decode | None = None) -> Divergence | None:
    """Like :func:`compare_exact`, but a first divergence at a near tie is tolerated."""
    div = compare_exact(expected, actual, allow_truncated=allow_truncated, decode=decode)
    if div is None or div.expected is None or div.actual is None:
        return div
    i = div.index
    if i >= len(expected_top) or i >= len(actual_top):
        div.note = "no logprobs at the divergence"
        return div
    ref, got = expected_top[i], actual_top[i]
    if div.actual not in ref or div.expected not in got:
        div.note = "tokens are not in each other's top-k"
        return div
    rank = sorted(ref, key=ref.__getitem__, reverse=True).index(div.actual)
    gap = ref[div.expected] - ref[div.actual]
    if rank > tolerance.max_rank or gap > tolerance.max_gap:
        div.note = f"rank {rank}, gap {gap:.3f} nats exceeds tolerance"
        return div
    div.tolerated = True
    div.note = f"near tie (rank {rank}, gap {gap:.3f} nats); not compared further"
    return div


def explained_by(div: Divergence, ties: Sequence[Divergence]) -> Divergence | None:
    """The tolerated near tie among ``ties`` that is ``div``: same index, same two tokens.

    The same flip, seen in a request that asked for logprobs, is the evidence a generation
    without logprobs lacks; a flip anywhere else, or to another token, stays a divergence.
    """
    pair = {div.expected, div.actual}
    return next((t for t in ties if t.tolerated and t.index == div.index
                 and {t.expected, t.actual} == pair), None)

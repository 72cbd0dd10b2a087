"""Exact and logprob-tolerant token comparison, and how a first divergence is reported."""

import pytest

from vllm_syncgate.parity import Tolerance, compare_exact, compare_logprob, first_difference


def _decode(ids):
    return " ".join(f"t{i}" for i in ids)


@pytest.mark.parametrize(
    ("expected", "actual", "truncated", "index"),
    [
        ([1, 2, 3], [1, 2, 3], False, None),
        ([1, 2, 3], [1, 9, 3], False, 1),
        ([1, 2, 3], [1, 2], False, 2),  # ended early
        ([1, 2], [1, 2, 3], False, 2),  # ran long
        ([1, 2, 3], [1, 2], True, None),  # a stop string cut it: a prefix is fine
        ([1, 2, 3], [1, 5], True, 1),  # ...but only a true prefix
        ([], [], False, None),
    ],
)
def test_first_difference(expected, actual, truncated, index):
    assert first_difference(expected, actual, truncated) == index


def test_exact_divergence_names_index_tokens_and_text():
    div = compare_exact([5, 6, 7, 8, 9], [5, 6, 7, 4, 9], decode=_decode)
    assert (div.index, div.expected, div.actual) == (3, 8, 4)
    assert div.context == [5, 6, 7]
    assert div.text == {"context": "t5 t6 t7", "expected": "t8", "actual": "t4"}
    described = div.describe()
    assert "token 3: expected 8, got 4" in described
    assert "'t5 t6 t7'" in described
    assert not div.tolerated


def test_exact_reports_an_early_end_as_end_token():
    div = compare_exact([1, 2, 3], [1, 2])
    assert (div.index, div.expected, div.actual) == (2, 3, None)
    assert "got <end>" in div.describe()


# Reference logprobs at the divergence (index 1): expected token 2 at -0.50, token 9 at -0.55.
_REF_TOP = [{1: -0.1}, {2: -0.50, 9: -0.55, 4: -3.0}]
_GOT_TOP = [{1: -0.1}, {9: -0.49, 2: -0.52}]


def test_logprob_mode_tolerates_a_near_tie_and_stops_comparing():
    div = compare_logprob([1, 2, 3, 3], [1, 9, 7, 7], expected_top=_REF_TOP, actual_top=_GOT_TOP)
    assert div.tolerated
    assert div.index == 1
    assert "near tie" in div.note


def test_logprob_mode_equal_sequences_pass():
    assert compare_logprob([1, 2], [1, 2], expected_top=_REF_TOP, actual_top=_GOT_TOP) is None


def test_logprob_mode_rejects_a_large_gap():
    div = compare_logprob([1, 2], [1, 9], expected_top=_REF_TOP, actual_top=_GOT_TOP,
                          tolerance=Tolerance(max_gap=0.01))
    assert not div.tolerated
    assert "exceeds tolerance" in div.note


def test_logprob_mode_rejects_a_far_rank():
    ref = [{1: -0.1}, {2: -0.50, 8: -0.51, 7: -0.52, 9: -0.53}]
    got = [{1: -0.1}, {9: -0.4, 2: -0.45}]
    div = compare_logprob([1, 2], [1, 9], expected_top=ref, actual_top=got,
                          tolerance=Tolerance(max_rank=2, max_gap=1.0))
    assert not div.tolerated
    assert "rank 3" in div.note


def test_logprob_mode_rejects_tokens_outside_each_others_top_k():
    div = compare_logprob([1, 2], [1, 5], expected_top=_REF_TOP, actual_top=_GOT_TOP)
    assert not div.tolerated
    assert "top-k" in div.note


def test_logprob_mode_without_logprobs_is_not_tolerated():
    div = compare_logprob([1, 2], [1, 9], expected_top=_REF_TOP, actual_top=[])
    assert not div.tolerated
    assert "no logprobs" in div.note

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_syncgate.repro.stats import (
    clopper_pearson_interval,
    runs_needed,
    wilson_interval,
    zero_failure_upper_bound,
)


@pytest.mark.parametrize(
    ("rate", "n95", "n99"),
    [(0.5, 5, 7), (0.3, 9, 13), (0.2, 14, 21), (0.1, 29, 44), (0.05, 59, 90), (0.02, 149, 228),
     (0.01, 299, 459)],
)
def test_runs_needed_matches_the_published_table(rate, n95, n99):
    assert runs_needed(rate, 0.95) == n95
    assert runs_needed(rate, 0.99) == n99


def test_runs_needed_rejects_nonsense():
    with pytest.raises(ValueError):
        runs_needed(0.0)
    with pytest.raises(ValueError):
        runs_needed(0.05, 1.0)


def test_zero_failure_bound_is_near_the_rule_of_three():
    assert zero_failure_upper_bound(59) < 0.05 < zero_failure_upper_bound(58)
    assert zero_failure_upper_bound(300) == pytest.approx(3 / 300, rel=0.01)


def test_known_intervals():
    lo, hi = clopper_pearson_interval(7, 20)
    assert (round(lo, 4), round(hi, 4)) == (0.1539, 0.5922)
    lo, hi = wilson_interval(7, 20)
    assert (round(lo, 4), round(hi, 4)) == (0.1812, 0.5671)
    assert clopper_pearson_interval(0, 10)[0] == 0.0
    assert clopper_pearson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0  # exactly: a broken test's interval holds 100%


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_intervals_contain_the_estimate_and_stay_in_range(kn):
    k, n = kn
    p = k / n
    w = wilson_interval(k, n)
    cp = clopper_pearson_interval(k, n)
    assert w[0] - 1e-9 <= p <= w[1] + 1e-9
    assert cp[0] - 1e-9 <= p <= cp[1] + 1e-9
    assert 0.0 <= cp[0] <= cp[1] <= 1.0
    assert 0.0 <= w[0] <= w[1] <= 1.0
    assert not any(math.isnan(x) for x in w + cp)

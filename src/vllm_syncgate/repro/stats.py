"""Flake statistics: how many reruns a claim needs, and what k failures in n runs say.

A verdict from one to three reruns is a guess. These functions turn rerun counts into statements
with a confidence level: "0 failures in 59 runs rules out a 5% flake rate at 95%", "7/20 fails,
rate in [15%, 59%]". Exact (Clopper-Pearson) bounds are computed by bisection on the binomial
tail, so no statistics library is needed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable


def runs_needed(rate: float, confidence: float = 0.95) -> int:
    """Runs with zero failures needed to claim the failure rate is below ``rate``.

    Solves ``(1 - rate) ** n <= 1 - confidence``; 5% at 95% gives 59.
    """
    if not 0.0 < rate < 1.0:
        raise ValueError(f"rate must be in (0, 1), got {rate}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return math.ceil(math.log(1.0 - confidence) / math.log(1.0 - rate) - 1e-12)


def zero_failure_upper_bound(runs: int, confidence: float = 0.95) -> float:
    """One-sided exact upper bound on the rate after ``runs`` passes and no failure."""
    if runs < 1:
        return 1.0
    return 1.0 - (1.0 - confidence) ** (1.0 / runs)


@functools.lru_cache(maxsize=4096)  # pure; merges and simulations ask for the same ones
def wilson_interval(failures: int, runs: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for the failure rate; good coverage even for small ``runs``."""
    _check(failures, runs)
    z = _z(confidence)
    p = failures / runs
    denom = 1.0 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denom
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denom
    # at k = 0 and k = n the bound is exactly 0 or 1 (rounding left 1 - 1e-16: "excludes 100%")
    return (0.0 if failures == 0 else max(0.0, centre - half),
            1.0 if failures == runs else min(1.0, centre + half))


@functools.lru_cache(maxsize=4096)
def clopper_pearson_interval(
    failures: int, runs: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Exact two-sided interval: never narrower than the evidence allows."""
    _check(failures, runs)
    alpha = 1.0 - confidence
    lower = 0.0 if failures == 0 else _bisect(
        lambda p: _binom_sf(failures, runs, p) - alpha / 2, increasing=True)
    upper = 1.0 if failures == runs else _bisect(
        lambda p: _binom_cdf(failures, runs, p) - alpha / 2, increasing=False)
    return lower, upper


def _check(failures: int, runs: int) -> None:
    if runs < 1 or not 0 <= failures <= runs:
        raise ValueError(f"need 0 <= failures <= runs and runs >= 1, got {failures}/{runs}")


def _z(confidence: float) -> float:
    """Two-sided normal quantile via bisection on erf (no scipy)."""
    target = confidence
    return _bisect(lambda z: math.erf(z / math.sqrt(2)) - target, increasing=True, hi=10.0)


def _log_pmf(k: int, n: int, p: float) -> float:
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(p) + (n - k) * math.log1p(-p))


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P[X <= k], summed from k downwards by the pmf's ratio in log space (no underflow), and
    stopped once the terms, past the mode, fall below e**-40 of the largest: a merge of
    thousands of runs needs it fast."""
    if p <= 0.0 or k >= n:
        return 1.0
    if p >= 1.0 or k < 0:
        return 0.0
    step = math.log1p(-p) - math.log(p)
    term = shift = _log_pmf(k, n, p)
    total = 1.0  # sum of exp(term - shift)
    for i in range(k, 0, -1):
        term += math.log(i) - math.log(n - i + 1) + step
        if term > shift:
            total, shift = total * math.exp(shift - term) + 1.0, term
        else:
            total += math.exp(term - shift)
            if term < shift - 40.0:
                break
    return min(1.0, math.exp(shift) * total)


def _binom_sf(k: int, n: int, p: float) -> float:
    """P[X >= k]."""
    return 1.0 if k <= 0 else 1.0 - _binom_cdf(k - 1, n, p)


def _bisect(f: Callable[[float], float], increasing: bool, lo: float = 0.0, hi: float = 1.0) -> float:
    for _ in range(52):  # 2**-52: a double's resolution on [0, 1]
        mid = (lo + hi) / 2
        value = f(mid)
        if (value < 0) == increasing:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2

import os

import pytest
from suite_chance import fails

ON_CI = os.environ.get("SUITE_CI") == "1"


def test_flaky_half():
    assert not fails("flaky_half", 0.5), "coin came up tails"


def test_flaky_third():
    assert not fails("flaky_third", 0.3), "coin came up tails"


def test_ci_only():
    # Fails only on the (simulated) CI machine: locally it never reproduces.
    assert not ON_CI, "only fails on the CI runner"


@pytest.mark.parametrize("label", ["a b", "x - y", "[nested]", "ü"])
def test_labels(label):
    assert not ON_CI or label == "a b", f"label {label!r} on CI"


def test_fine():
    pass

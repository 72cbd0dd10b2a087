"""Budget files: what they mean, and a one-line error naming file and key for every bad one."""

import pytest

from vllm_syncgate.audit import StepKind, load_budgets
from vllm_syncgate.audit.budgets import builtin_budget_path
from vllm_syncgate.errors import BudgetError


@pytest.fixture
def good(data_dir):
    return load_budgets(data_dir / "audit" / "good_budget.toml")


def test_limits_fall_back_to_default_and_missing_kinds_are_zero(good):
    budget = good.select("v1", speculation=False)
    assert budget.limit(StepKind.DECODE, "event_sync") == 1
    assert budget.limit(StepKind.EMPTY, "event_sync") == 0
    assert budget.limit(StepKind.DECODE, "device_sync") == 0


def test_select_prefers_exact_runner_then_wildcard(good):
    assert good.select("v2", speculation=True).runner == "*"
    with pytest.raises(BudgetError, match="no budget for runner=v2 speculation=off"):
        good.select("v2", speculation=False)


BAD = {
    "syntax": ('profile = "x"\n[[budget]\n', "<toml>: syntax error"),
    "unknown kind": (
        'profile = "x"\n[[budget]]\n[budget.limits.decode]\nhost_sync = 1\n',
        "budget[0].limits.decode.host_sync: unknown sync kind",
    ),
    "negative count": (
        'profile = "x"\n[[budget]]\n[budget.limits.default]\nevent_sync = -1\n',
        "budget[0].limits.default.event_sync: must not be negative, got -1",
    ),
    "float count": (
        'profile = "x"\n[[budget]]\n[budget.limits.default]\nevent_sync = 1.5\n',
        "budget[0].limits.default.event_sync: must be an integer count",
    ),
    "unknown step kind": (
        'profile = "x"\n[[budget]]\n[budget.limits.prefil]\nevent_sync = 1\n',
        "budget[0].limits.prefil: unknown step kind",
    ),
    "allow without reason": (
        'profile = "x"\n[[budget]]\n[[budget.allow]]\nsite = "a.b:C.d"\n',
        "budget[0].allow[0].reason: must say why",
    ),
    "allow site not module:qualname": (
        'profile = "x"\n[[budget]]\n[[budget.allow]]\nsite = "C.d"\nreason = "r"\n',
        "budget[0].allow[0].site: must be 'module:qualname'",
    ),
    "zero cap": (
        'profile = "x"\n[[budget]]\n[[budget.allow]]\nsite = "a:B.c"\nreason = "r"\nmax_per_step = 0\n',
        "budget[0].allow[0].max_per_step: must be a positive integer, got 0",
    ),
    "bad runner": ('profile = "x"\n[[budget]]\nrunner = "v3"\n', "budget[0].runner: must be one of"),
    "no budgets": ('profile = "x"\n', "budget: must be a non-empty array"),
    "duplicate": ('profile = "x"\n[[budget]]\n[[budget]]\n', "budget[1]: duplicate budget for x/*/spec-off"),
    "unknown top key": ('profile = "x"\nbudgets = []\n', "budgets: unknown key"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_budget_file_is_one_line_naming_file_and_key(case, tmp_path):
    text, expected = BAD[case]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(BudgetError) as info:
        load_budgets(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert expected in message


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(BudgetError, match="does not exist"):
        load_budgets(tmp_path / "nope.toml")
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(BudgetError, match="not UTF-8"):
        load_budgets(binary)


@pytest.mark.parametrize("profile", ["cpu", "cuda", "npu"])
def test_builtin_budgets_parse_and_cover_both_speculation_modes(profile):
    path = builtin_budget_path(profile)
    budgets = load_budgets(path)
    assert budgets.profile == profile
    for speculation in (False, True):
        assert budgets.select("v1", speculation=speculation) is not None

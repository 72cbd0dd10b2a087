"""A budget of your own extends a built-in one: only what differs is written."""

import subprocess
import sys
from pathlib import Path

import pytest

from vllm_syncgate.audit.budgets import builtin_budget_path, load_budgets
from vllm_syncgate.errors import BudgetError

SYNCGATE = Path(sys.executable).with_name("syncgate")
MINE = "mine.module:Runner.timing"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_extends_keeps_the_base_and_adds_to_every_runner_of_the_mode(tmp_path):
    base = load_budgets(builtin_budget_path("cuda"))
    mine = load_budgets(_write(tmp_path / "b.toml", f'''extends = "cuda"
[[budget]]
speculation = false
[budget.limits.default]
device_sync = 1
[[budget.allow]]
site = "{MINE}"
kind = "device_sync"
reason = "opt-in timing"
'''))
    assert mine.profile == "cuda"
    assert [b.label for b in mine.budgets] == [b.label for b in base.budgets]
    for old, new in zip(base.budgets, mine.budgets, strict=True):
        added = [r.site for r in new.allow if r not in old.allow]
        assert new.allow[:len(old.allow)] == old.allow  # nothing of the base is lost
        assert added == ([MINE] if not new.speculation else [])
        assert new.limits["default"].get("device_sync") == (1 if not new.speculation else
                                                            old.limits["default"].get("device_sync"))


def test_extends_one_runner_only(tmp_path):
    mine = load_budgets(_write(tmp_path / "b.toml", f'''extends = "cuda"
[[budget]]
runner = "v2"
[[budget.allow]]
site = "{MINE}"
reason = "only the model runner v2 does this"
'''))
    has = {b.label: any(r.site == MINE for r in b.allow) for b in mine.budgets}
    assert has["cuda/v2/spec-off"]
    assert not has["cuda/v1/spec-off"]


@pytest.mark.parametrize(("text", "key"), [
    ('extends = "nope"\n', "extends: no built-in budget 'nope'"),
    ('extends = "b.toml"\n', "extends: b.toml: extends itself"),
    ('extends = 3\n', "extends: must be a built-in budget name"),
])
def test_bad_extends_is_one_line_naming_the_key(tmp_path, text, key):
    path = _write(tmp_path / "b.toml", text)
    with pytest.raises(BudgetError) as info:
        load_budgets(path)
    assert key in str(info.value)


def test_doctor_accepts_a_budget_that_only_extends(tmp_path):
    """Through the CLI: a file of one line is a whole budget set (the base's)."""
    path = _write(tmp_path / "b.toml", 'extends = "cuda"\n')
    done = subprocess.run([str(SYNCGATE), "doctor", "--budget", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"budget    {path}: ok (cuda/v1/spec-off" in done.stdout

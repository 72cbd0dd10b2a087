"""Allow hygiene (issue 21 item 6), like ruff's unused-noqa check: an allow rule of your own
budget file, an inline allow or a baseline entry that matched nothing is a warning naming it, and
a failure with ``--strict``; a baseline entry's reason is shown with the finding it excuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SYNCING = ("import torch\n\n\nclass GPUModelRunner:\n    def execute_model(self):\n"
           "        torch.cuda.synchronize()\n")
RULE = ('extends = "cuda"\n[[budget]]\nspeculation = false\n[[budget.allow]]\n'
        'site = "{site}"\nkind = "device_sync"\nreason = "timing, by design"\n')


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "runner.py").write_text(SYNCING)
    return root


def test_an_inline_allow_on_a_line_without_a_failing_sync_is_named(tree, run_scan):
    text = SYNCING.replace("    def execute_model(self):\n",
                           "    def execute_model(self):\n"
                           "        x = 1  # syncgate: allow[event_sync] left over\n")
    (tree / "runner.py").write_text(text)
    code, _, err = run_scan(str(tree))
    assert code == 1  # the sync below still fails
    assert "runner.py:6: unused allow: # syncgate: allow[event_sync] excuses no failing sync" in err
    (tree / "runner.py").write_text(text.replace("        torch.cuda.synchronize()\n", ""))
    assert run_scan(str(tree))[0] == 0  # a warning
    assert run_scan(str(tree), "--strict")[0] == 1  # a failure


def test_a_used_inline_allow_is_not_named_and_strict_passes(tree, run_scan):
    (tree / "runner.py").write_text(SYNCING.replace(
        "synchronize()\n", "synchronize()  # syncgate: allow[device_sync] timing, by design\n"))
    code, _, err = run_scan(str(tree), "--strict")
    assert code == 0
    assert "unused" not in err


def test_a_misspelled_site_in_your_budget_is_named_and_fails_strict(tree, run_scan, tmp_path):
    budget = tmp_path / "budget.toml"
    budget.write_text(RULE.format(site="runner:GPUModelRuner.execute_model"))  # typo
    code, _, err = run_scan(str(tree), "--budget", str(budget))
    assert code == 1
    assert "unused allow rule: site = 'runner:GPUModelRuner.execute_model' kind = 'device_sync'" in err
    assert run_scan(str(tree), "--budget", str(budget), "--strict")[0] == 1
    budget.write_text(RULE.format(site="runner:GPUModelRunner.execute_model"))
    code, _, err = run_scan(str(tree), "--budget", str(budget), "--strict")
    assert code == 0
    assert "unused" not in err


def test_built_in_rules_are_never_called_unused(tree, run_scan):
    (tree / "runner.py").write_text(SYNCING.replace("torch.cuda.synchronize()", "pass"))
    code, _, err = run_scan(str(tree), "--strict")
    assert code == 0
    assert "unused" not in err


def test_a_baseline_entry_that_matches_nothing_is_named_and_fails_strict(tree, run_scan):
    baseline = tree / "known.json"
    assert run_scan(str(tree), "--write-baseline", str(baseline))[0] == 0
    assert run_scan(str(tree), "--baseline", str(baseline), "--strict")[0] == 0
    (tree / "runner.py").write_text(SYNCING.replace("torch.cuda.synchronize()", "pass"))
    code, _, err = run_scan(str(tree), "--baseline", str(baseline))
    assert code == 0
    assert "unused baseline entry: runner.py GPUModelRunner.execute_model device_sync" in err
    assert run_scan(str(tree), "--baseline", str(baseline), "--strict")[0] == 1


def test_a_baseline_reason_is_shown_with_the_finding(tree, run_scan):
    baseline = tree / "known.json"
    run_scan(str(tree), "--write-baseline", str(baseline))
    doc = json.loads(baseline.read_text())
    doc["findings"][0]["reason"] = "tracked in #4242"
    baseline.write_text(json.dumps(doc))
    code, out, _ = run_scan(str(tree), "--baseline", str(baseline), "-v")
    assert code == 0
    assert "allowed: known: tracked in #4242 (baseline " in out


def test_a_baseline_reason_must_be_a_string(tree, run_scan):
    baseline = tree / "known.json"
    run_scan(str(tree), "--write-baseline", str(baseline))
    doc = json.loads(baseline.read_text())
    doc["findings"][0]["reason"] = 7
    baseline.write_text(json.dumps(doc))
    code, _, err = run_scan(str(tree), "--baseline", str(baseline))
    assert code == 2
    assert "findings[0].reason: must be a string" in err


def test_rewriting_a_baseline_keeps_the_reasons_written_in_it(tree, run_scan):
    baseline = tree / "known.json"
    run_scan(str(tree), "--write-baseline", str(baseline))
    doc = json.loads(baseline.read_text())
    doc["findings"][0]["reason"] = "tracked in #4242"
    baseline.write_text(json.dumps(doc))
    assert run_scan(str(tree), "--write-baseline", str(baseline))[0] == 0
    assert [e.get("reason") for e in json.loads(baseline.read_text())["findings"]] == ["tracked in #4242"]

"""Every rule, positive and negative: the scan reports exactly the lines marked ``# expect:``."""

from __future__ import annotations

from pathlib import Path

from vllm_syncgate.scan.callgraph import scan


def test_rules_fixture_reports_exactly_the_marked_sites(scan_data, expected_sites):
    rules = scan_data / "rules"
    result = scan([str(rules)], entries=["RulesModelRunner.execute_model"])
    reported = {(Path(f.file).name, f.line, f.kind, f.guard) for f in result.findings}
    expected = expected_sites(rules)
    assert len(expected) >= 25  # the fixture covers every rule and guard
    assert reported == expected
    assert result.exit_code == 1


def test_override_replaces_the_base_method(scan_data):
    result = scan([str(scan_data / "rules")], entries=["RulesModelRunner.execute_model"])
    post = [f for f in result.findings if f.qualname.endswith("._post")]
    assert post == []  # RunnerBase._post's .tolist() is unreachable from the subclass


def test_findings_carry_the_call_path_and_symbol(scan_data):
    result = scan([str(scan_data / "rules")], entries=["RulesModelRunner.execute_model"])
    spec_only = next(f for f in result.findings if f.qualname == "RulesModelRunner._spec_only")
    assert spec_only.entry == "RulesModelRunner.execute_model"
    assert spec_only.path == (
        "RunnerBase.execute_model",
        "RulesModelRunner.step_rules",
        "RulesModelRunner.guard_rules",
        "RulesModelRunner._spec_only",
    )
    assert spec_only.symbol == "runner_rules:RulesModelRunner._spec_only"
    assert any("[speculation]" in c for c in spec_only.conditions)

"""`syncgate scan` as CI uses it: formats, exit codes, allow-lists, bad input."""

from __future__ import annotations

import json

import pytest

from vllm_syncgate.errors import ScanError
from vllm_syncgate.scan.callgraph import scan

FINDING_KEYS = {"file", "line", "qualname", "kind", "api", "guard", "entry", "path"}
GUARDS = {
    "none", "speculation", "async_scheduling", "warmup", "allowed", "opt_in", "unknown_residence"
}
KINDS = {"device_sync", "stream_sync", "event_sync", "blocking_readback", "blocking_copy"}
RULES_ENTRY = ("--entry", "RulesModelRunner.execute_model")


def test_json_has_the_stable_schema(scan_data, scan_json):
    code, report = scan_json(str(scan_data / "rules"), *RULES_ENTRY)
    assert code == 1
    assert report["findings"]
    for finding in report["findings"]:
        assert set(finding) >= FINDING_KEYS
        assert finding["guard"] in GUARDS
        assert finding["kind"] in KINDS
        assert isinstance(finding["path"], list)
        assert finding["path"][-1] == finding["qualname"]
    assert report["summary"]["failing"] == sum(f["guard"] == "none" for f in report["findings"])


def test_sarif_is_2_1_0_with_errors_for_gate_failures(scan_data, run_scan):
    code, out, _ = run_scan(str(scan_data / "rules"), *RULES_ENTRY, "--format", "sarif")
    sarif = json.loads(out)
    assert code == 1
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert rule_ids == KINDS
    levels = {r["properties"]["guard"]: r["level"] for r in run["results"]}
    assert levels["none"] == "error"
    assert levels["speculation"] == "note"
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith(".py")
    assert location["region"]["startLine"] > 0


def test_github_annotations(scan_data, run_scan):
    code, out, _ = run_scan(str(scan_data / "rules"), *RULES_ENTRY, "--format", "github")
    assert code == 1
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    notices = [line for line in out.splitlines() if line.startswith("::notice ")]
    assert errors
    assert notices == []  # errors only: GitHub shows about 10 annotations a step (issue 17)
    assert out.splitlines()[-1].startswith("syncgate scan: FAIL: ")  # and one summary line
    assert errors[0].startswith("::error file=tests/data/scan/rules/runner_")
    assert ",line=" in errors[0]
    assert "title=syncgate scan%3A " in errors[0]


def test_text_shows_each_site_with_entry_points_code_and_path(scan_data, run_scan):
    """Issue 17: one block per site with its entry points; guarded sites only with -v."""
    code, out, _ = run_scan(str(scan_data / "fix_shape"), "--entry", "NPUModelRunner.execute_model")
    assert code == 0
    assert "self.num_computed_tokens_event.synchronize()" not in out  # guarded: not by default
    code, out, _ = run_scan(str(scan_data / "fix_shape"), "--entry", "NPUModelRunner.execute_model", "-v")
    assert "entry points (1): NPUModelRunner.execute_model" in out
    assert "self.num_computed_tokens_event.synchronize()" in out
    assert "path: GPUModelRunner.execute_model -> NPUModelRunner.prepare_inputs" in out
    assert "ok: 0 failing site(s) of 1" in out


def test_budget_allow_list_turns_a_failure_into_allowed(scan_data, tmp_path, scan_json):
    budget = tmp_path / "budget.toml"
    budget.write_text(
        'profile = "test"\n[[budget]]\nspeculation = false\n'
        '[[budget.allow]]\nsite = "runner_*:RulesModelRunner.*"\nreason = "fixture"\n'
        '[[budget.allow]]\nsite = "runner_base:RunnerBase._inherited_sync"\nreason = "fixture"\n'
    )
    code, report = scan_json(str(scan_data / "rules"), *RULES_ENTRY, "--budget", str(budget))
    assert code == 0
    # an allow rule on the path also covers the readback of unknown residence
    assert {f["guard"] for f in report["findings"]} == GUARDS - {"none", "unknown_residence"}
    reasons = {f["reason"] for f in report["findings"] if f["guard"] == "allowed"}
    assert reasons == {"fixture"}  # a gpu_sync_allowed() region is no pass by itself (issue 20)


def test_speculative_budget_allow_rules_do_not_apply(scan_data, tmp_path, scan_json):
    budget = tmp_path / "budget.toml"
    budget.write_text(
        'profile = "test"\n[[budget]]\nspeculation = true\n'
        '[[budget.allow]]\nsite = "*:*"\nreason = "only with speculation"\n'
    )
    code, _ = scan_json(str(scan_data / "rules"), *RULES_ENTRY, "--budget", str(budget))
    assert code == 1


def test_bad_budget_is_a_one_line_error(scan_data, tmp_path, run_scan):
    budget = tmp_path / "budget.toml"
    budget.write_text('profile = "x"\n[[budget]]\n[[budget.allow]]\nsite = "nocolon"\n')
    code, out, err = run_scan(str(scan_data / "rules"), "--budget", str(budget))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "budget[0].allow[0].site" in err


def test_missing_path_exits_2(tmp_path, run_scan):
    code, out, err = run_scan(str(tmp_path / "nope"))
    assert code == 2
    assert out == ""
    assert "nope: no such file or directory" in err


def test_syntax_error_is_reported_and_the_rest_scanned(scan_data, tmp_path, run_scan):
    broken = tmp_path / "broken.py"
    broken.write_text("def oops(:\n")
    code, out, err = run_scan(str(scan_data / "fix_shape"), str(broken), "-v")
    assert code == 0
    assert "broken.py: syntax error at line 1" in err
    assert "NPUModelRunner.execute_model" in out


def test_only_unparsable_files_exit_2(tmp_path, run_scan):
    broken = tmp_path / "broken.py"
    broken.write_text("class (:\n")
    code, _, err = run_scan(str(broken))
    assert code == 2
    assert "nothing could be scanned" in err
    assert "syntax error" in err


def test_binary_files_are_skipped(scan_data, tmp_path, run_scan):
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02binary")
    result = scan([str(scan_data / "fix_shape"), str(tmp_path)])
    assert [p.reason for p in result.skipped] == ["binary file"]
    assert result.files == 2
    code, _, err = run_scan(str(scan_data / "fix_shape"), str(tmp_path / "blob.py"))
    assert code == 0
    assert "skipped" in err
    assert "blob.py: binary file" in err


def test_unknown_entry_warns_with_nearest_names(scan_data, run_scan):
    code, _, err = run_scan(str(scan_data / "fix_shape"),
                            "--entry", "NPUModelRunner.execute_modle",
                            "--entry", "NPUModelRunner.sample_tokens")
    assert code == 0
    assert "entry NPUModelRunner.execute_modle: no such method; nearest: execute_model" in err


def test_no_entry_at_all_exits_2(scan_data, run_scan):
    code, _, err = run_scan(str(scan_data / "fix_shape"), "--entry", "NPUModelRuner.execute_model")
    assert code == 2
    assert "no entry point found" in err
    assert "nearest: NPUModelRunner" in err


def test_output_file_is_written_whole(scan_data, tmp_path, run_scan):
    target = tmp_path / "reports" / "scan.json"
    code, out, _ = run_scan(str(scan_data / "fix_shape"), "--format", "json",
                            "--output", str(target))
    assert code == 0
    assert out == ""
    assert json.loads(target.read_text())["summary"]["failing"] == 0
    assert [p.name for p in target.parent.iterdir()] == ["scan.json"]


def test_scan_error_type_for_api_callers(tmp_path):
    with pytest.raises(ScanError):
        scan([str(tmp_path / "missing")])


def test_hidden_folders_inside_a_tree_are_not_scanned(scan_data, tmp_path):
    tree = tmp_path / "tree"
    (tree / ".venv").mkdir(parents=True)
    (tree / ".venv" / "broken.py").write_text("def (:\n")
    (tree / "ok.py").write_text((scan_data / "fix_shape" / "upstream_runner.py").read_text())
    result = scan([str(tree)])
    assert result.files == 1
    assert result.problems == []


def test_a_folder_without_python_files_exits_2(tmp_path, run_scan):
    (tmp_path / "notes.txt").write_text("nothing to scan")
    code, _, err = run_scan(str(tmp_path))
    assert code == 2
    assert "nothing could be scanned" in err


def _subtree(root, package_import: str) -> None:
    """``pkg/worker`` with ``worker/__init__.py`` but no ``pkg/__init__.py``."""
    worker = root / "pkg" / "worker"
    worker.mkdir(parents=True)
    (worker / "__init__.py").write_text("")
    (worker / "batch.py").write_text("class Batch:\n    pass\n")
    (worker / "runner.py").write_text(
        f"import torch\nfrom {package_import}.batch import Batch\n\n\n"
        "class SubModelRunner:\n"
        "    def execute_model(self, ids_gpu):\n"
        "        return ids_gpu.tolist()\n"
    )


def test_subtree_without_parent_packages_gets_its_full_module_names(tmp_path, scan_json):
    _subtree(tmp_path, "pkg.worker")
    budget = tmp_path / "allow.toml"
    budget.write_text(
        'profile = "test"\n[[budget]]\nspeculation = false\n'
        '[[budget.allow]]\nsite = "pkg.worker.runner:SubModelRunner.execute_model"\n'
        'reason = "by design"\n'
    )
    code, report = scan_json(str(tmp_path / "pkg" / "worker"), "--budget", str(budget))
    assert code == 0
    [finding] = report["findings"]
    assert finding["runner"] == "pkg.worker.runner:SubModelRunner"
    assert finding["guard"] == "allowed"
    assert report["warnings"] == []


def test_subtree_whose_imports_disagree_warns_in_one_line(tmp_path, run_scan):
    _subtree(tmp_path, "pkg.worker")
    (tmp_path / "pkg" / "worker" / "other.py").write_text("from elsewhere.worker.batch import B\n")
    code, _, err = run_scan(str(tmp_path / "pkg" / "worker"), "--profile", "cpu")
    assert code == 1
    warnings = [line for line in err.splitlines() if "no __init__.py above it" in line]
    assert len(warnings) == 1
    assert "(elsewhere, pkg)" in warnings[0]


def test_json_names_the_entry_module_and_counts_sites_and_pairs(scan_data, scan_json):
    code, report = scan_json(str(scan_data / "rules"), *RULES_ENTRY)
    assert code == 1
    for finding in report["findings"]:
        assert finding["entry_symbol"] == f"{finding['runner']}.{finding['entry'].split('.')[-1]}"
    summary = report["summary"]
    pairs = {(f["file"], f["line"], f["entry"]) for f in report["findings"]}
    assert summary["findings"] == len(report["findings"]) >= len(pairs)
    assert summary["sites"] == len({(f["file"], f["line"]) for f in report["findings"]})
    failing = {(f["file"], f["line"]) for f in report["findings"] if f["guard"] == "none"}
    assert summary["failing_sites"] == len(failing)


@pytest.mark.parametrize(("overrides", "guard"), [("true", "allowed"), ("false", "none")])
def test_allow_rule_with_overrides_covers_the_subclass_method(tmp_path, scan_json, overrides, guard):
    (tmp_path / "runners.py").write_text(
        "import torch\n\n\n"
        "class BaseModelRunner:\n"
        "    def execute_model(self):\n"
        "        self._to_list()\n\n"
        "    def _to_list(self):\n"
        "        pass\n\n\n"
        "class SubModelRunner(BaseModelRunner):\n"
        "    def _to_list(self):\n"
        "        self.transfer_event.synchronize()\n"
    )
    budget = tmp_path / "allow.toml"
    budget.write_text(
        'profile = "test"\n[[budget]]\nspeculation = false\n[[budget.allow]]\n'
        'site = "runners:BaseModelRunner._to_list"\nkind = "event_sync"\nmax_per_step = 1\n'
        f'overrides = {overrides}\nreason = "the transfer wait"\n'
    )
    _, report = scan_json(str(tmp_path / "runners.py"), "--entry", "SubModelRunner.execute_model",
                          "--budget", str(budget))
    assert [f["guard"] for f in report["findings"]] == [guard]

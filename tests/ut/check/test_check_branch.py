"""``check --source BRANCH`` runs the branch at the unit level (over the installed build), never the
installed vLLM; without ``--source`` nothing is imported from the working directory.

Each test runs the real unit level (a child importing vLLM: about a minute on 2 cores)."""

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

RUNNER = "v1/worker/gpu_model_runner.py"
ATTENTION = "v1/attention/backends/flash_attn.py"
MARKER = "imported-from-cwd"


def _check(args, cwd, report):
    done = subprocess.run([sys.executable, "-m", "vllm_syncgate", "check", "--report-dir",
                           str(report), "--quiet", "--no-cache", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ))
    doc = json.loads((report / "report.json").read_text()) if (report / "report.json").exists() else {}
    return done, doc


def test_to_list_rewritten_branch_fails_the_unit_level(vllm_branch, edit_method, tmp_path):
    root = vllm_branch("to_list", lambda pkg: edit_method(
        pkg / RUNNER, "GPUModelRunner", "_to_list", body=["return sampled_token_ids.tolist()"]))
    done, doc = _check(["--levels", "unit", "--source", str(root), "--trust-source"], tmp_path,
                       tmp_path / "r")
    assert done.returncode == 1, done.stdout + done.stderr
    unit = doc["levels"]["unit"]
    assert unit["status"] == "fail"
    assert unit["code"]["tree"] == str(root)
    assert unit["code"]["overlay"] is not None
    failing = {c["name"] for c in unit["cases"] if not c["passed"]}
    assert failing == {"probes.to_list"}
    [case] = [c for c in unit["cases"] if c["name"] == "probes.to_list"]
    # the branch's line, as run from the overlay, named at the branch's own file
    assert case["file"] == str(root / "vllm" / RUNNER)
    assert f"tree {root} (no git commit)" in done.stdout
    junit = (tmp_path / "r" / "junit.xml").read_text()
    assert f'name="syncgate.code.tree" value="{root}"' in junit



def _files(root):
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_update_states_helper_branch_fails_the_unit_level_and_is_untouched_without_source(
        vllm_branch, edit_method, tmp_path):
    """Issue 21's acceptance cell at the unit level: a readback added in a helper _update_states
    calls every step fails the update_states probe at that line; the same tree, where check runs
    without --source, is neither imported (its __init__ leaves a marker) nor written to."""
    marker = tmp_path / MARKER
    added = "self.input_ids.gpu[:1].tolist()"

    def helper_sync(pkg):
        edit_method(pkg / RUNNER, "GPUModelRunner", "_process_encoder_cache_scheduler_output",
                    prepend=[added])
        init = pkg / "__init__.py"
        init.write_text(init.read_text() + f"\nopen({str(marker)!r}, 'a').write('imported')\n")

    root = vllm_branch("update_states_helper", helper_sync)
    line = (root / "vllm" / RUNNER).read_text().splitlines().index(" " * 8 + added) + 1
    done, doc = _check(["--levels", "unit", "--source", str(root), "--trust-source"], tmp_path,
                       tmp_path / "r")
    assert done.returncode == 1, done.stdout + done.stderr
    assert marker.exists()  # the branch is what ran
    unit = doc["levels"]["unit"]
    assert {c["name"] for c in unit["cases"] if not c["passed"]} == {
        "probes.update_states[async]", "probes.update_states[sync]"}
    [case] = [c for c in unit["cases"] if c["name"] == "probes.update_states[async]"]
    assert case["file"] == str(root / "vllm" / RUNNER)  # the tree's file, not the overlay's
    assert case["line"] == line
    assert case["detail"].endswith(f"{RUNNER}:{line}:_process_encoder_cache_scheduler_output")
    assert "blocking_readback: Tensor.tolist in 8/8 steps" in case["detail"]
    junit = (tmp_path / "r" / "junit.xml").read_text()
    assert 'name="probes.update_states[async]"' in junit
    assert "_process_encoder_cache_scheduler_output" in junit

    marker.unlink()
    before = _files(root)
    done, doc = _check(["--levels", "unit"], root, tmp_path / "r2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists()
    assert _files(root) == before
    assert doc["levels"]["unit"]["code"]["tree"] is None
    passing = {c["name"] for c in doc["levels"]["unit"]["cases"] if c["passed"]}
    assert {"probes.update_states[async]", "probes.update_states[sync]"} <= passing

def test_a_changed_method_no_probe_runs_is_not_tested_and_alone_a_unit_error(
        vllm_branch, edit_method, tmp_path):
    """A readback added in ``_prepare_input_ids`` (a helper of the step no probe calls) passes
    every probe; traced in the child, it is a NOT TESTED case at its line and, with no serve
    level to run it, the unit level is ERROR (exit 2). ``_update_states``, changed too, is run by
    its probe and not named."""
    def two_changes(pkg):
        edit_method(pkg / RUNNER, "GPUModelRunner", "_prepare_input_ids",
                    prepend=["self.last_first_token = self.input_ids.gpu[:1].tolist()"])
        edit_method(pkg / RUNNER, "GPUModelRunner", "_update_states",
                    prepend=["self.last_first_token = None"])

    root = vllm_branch("unprobed_helper", two_changes)
    runner = root / "vllm" / RUNNER
    line = runner.read_text().splitlines().index("    def _prepare_input_ids(") + 1
    done, doc = _check(["--levels", "unit", "--source", str(root), "--trust-source"], tmp_path,
                       tmp_path / "r")
    assert done.returncode == 2, done.stdout + done.stderr
    unit = doc["levels"]["unit"]
    assert unit["status"] == "error"
    assert unit["reason"] == (f"error: changed code not run by any unit probe: {runner}:{line} "
                              "GPUModelRunner._prepare_input_ids; the serve level did not run to "
                              "cover it")
    assert all(c["passed"] for c in unit["cases"] if c["name"].startswith("probes."))
    [case] = [c for c in unit["cases"] if c.get("skipped")]
    assert (case["name"], case["file"], case["line"]) == ("GPUModelRunner._prepare_input_ids",
                                                          str(runner), line)
    assert case["detail"].endswith(":GPUModelRunner._prepare_input_ids: not run by any unit probe")
    assert re.search(r"\n +GPUModelRunner\._prepare_input_ids +NOT TESTED +vllm\.", done.stdout)
    junit = (tmp_path / "r" / "junit.xml").read_text()
    assert ('<skipped message="vllm.v1.worker.gpu_model_runner:GPUModelRunner._prepare_input_ids: '
            'not run by any unit probe"') in junit


def test_a_readback_added_in_an_attention_builder_fails_the_scan_and_is_a_unit_error(
        vllm_branch, edit_method, tmp_path):
    """A readback added in FlashAttention's metadata builder (outside the runners' folder; no
    probe builds attention metadata): the scan fails at its line, the unit level names the
    builder NOT TESTED and is ERROR, and the run exits 1 (a level FAILed: the gate found a
    problem), not 2."""
    added = "longest_context = int(common_attn_metadata.compute_num_computed_tokens().max())"
    root = vllm_branch("attention_builder", lambda pkg: edit_method(
        pkg / ATTENTION, "FlashAttentionMetadataBuilder", "build", prepend=[added]))
    builder = root / "vllm" / ATTENTION
    lines = builder.read_text().splitlines()
    line = next(i for i, x in enumerate(lines, 1) if x.strip() == added)
    done, doc = _check(["--levels", "scan,unit", "--source", str(root), "--trust-source"],
                       tmp_path, tmp_path / "r")
    assert done.returncode == 1, done.stdout + done.stderr
    scan, unit = doc["levels"]["scan"], doc["levels"]["unit"]
    assert scan["status"] == "fail"
    assert any(c["line"] == line and c["file"].endswith(ATTENTION) for c in scan["cases"]
               if not c["passed"]), scan["cases"]
    assert unit["status"] == "error"
    [case] = [c for c in unit["cases"] if c.get("skipped")]
    def_line = next(i for i, x in enumerate(lines, 1) if x.startswith("    def build("))
    assert (case["name"], case["file"], case["line"]) == ("FlashAttentionMetadataBuilder.build",
                                                          str(builder), def_line)
    assert unit["reason"] == (f"error: changed code not run by any unit probe: {builder}:{def_line} "
                              "FlashAttentionMetadataBuilder.build; the serve level did not run to "
                              "cover it")
    assert re.search(r"\n +FlashAttentionMetadataBuilder\.build +NOT TESTED +vllm\.", done.stdout)
    assert "syncgate check: FAIL (scan FAIL" in done.stdout


def test_check_in_a_folder_holding_vllm_imports_nothing_from_it(tmp_path):
    """A fake vllm/ (layout of a tree, an __init__ that leaves a marker) where check runs."""
    fake = tmp_path / "vllm"
    (fake / "v1" / "worker").mkdir(parents=True)
    (fake / "__init__.py").write_text(
        f"open({str(tmp_path / MARKER)!r}, 'w').write('imported')\nraise SystemExit(9)\n")
    done, doc = _check(["--levels", "scan,unit"], tmp_path, tmp_path / "r")
    assert not (tmp_path / MARKER).exists()
    assert done.returncode == 0, done.stdout + done.stderr
    assert doc["levels"]["unit"]["code"]["tree"] is None  # the installed vLLM, named as such
    assert "site-packages" in doc["levels"]["unit"]["code"]["installed"]
    assert str(fake) not in json.dumps(doc["levels"])


def test_a_branch_of_another_release_is_a_unit_error_not_a_pass(vllm_branch, tmp_path):
    def other_release(pkg):
        (pkg / "_version.py").write_text("__version__ = version = '0.1.0'\n")

    root = vllm_branch("old_release", other_release)
    done, doc = _check(["--levels", "unit", "--source", str(root), "--trust-source"], tmp_path,
                       tmp_path / "r")
    assert done.returncode == 2, done.stdout + done.stderr
    unit = doc["levels"]["unit"]
    assert unit["status"] == "error"
    assert unit["reason"].startswith("error: compiled code differs: the tree declares vllm 0.1.0")
    assert "== unit: ERROR (error: compiled code differs" in done.stdout


def test_a_branch_that_does_not_import_is_a_unit_error(vllm_branch, tmp_path):
    def broken(pkg):
        init = pkg / "__init__.py"
        init.write_text(init.read_text() + "\nfrom vllm._no_such_module import x\n")

    root = vllm_branch("broken", broken)
    done, doc = _check(["--levels", "unit", "--source", str(root), "--trust-source"], tmp_path,
                       tmp_path / "r")
    assert done.returncode == 2, done.stdout + done.stderr
    reason = doc["levels"]["unit"]["reason"]
    assert reason.startswith("error: vLLM does not load from ")
    assert "ModuleNotFoundError: No module named 'vllm._no_such_module'" in reason

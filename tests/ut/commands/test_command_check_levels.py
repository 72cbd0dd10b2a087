"""``syncgate check --levels/--source``: exit 0 on a clean tree, 1 naming the sync, 2 on bad input."""

import json
import shutil

import pytest

from vllm_syncgate.cli import main

RUNNER = "vllm/v1/worker/gpu_model_runner.py"


@pytest.fixture
def tree(data_dir, tmp_path):
    root = tmp_path / "vllm-checkout"
    shutil.copytree(data_dir / "check" / "vllm_tree", root)
    return root


def _check(tmp_path, *args):
    report = tmp_path / "report"
    return main(["check", "--report-dir", str(report), *args]), report


def test_clean_tree_passes_the_scan_level(tree, tmp_path, capsys):
    code, report = _check(tmp_path, "--levels", "scan", "--source", str(tree))
    out = capsys.readouterr().out
    assert code == 0
    assert "== scan: PASS" in out
    assert out.rstrip().splitlines()[-1].startswith(
        "syncgate check: PASS (scan PASS")
    assert json.loads((report / "report.json").read_text())["levels"]["scan"]["status"] == "pass"


def test_unguarded_sync_fails_and_stops_before_serve(tree, tmp_path, capsys):
    path = tree / RUNNER
    path.write_text(path.read_text().replace(
        "        if self.speculative_config is not None:\n            self._wait_for_drafts()",
        "        self._wait_for_drafts()"))
    code, report = _check(tmp_path, "--levels", "scan,serve", "--source", str(tree),
                          "--trust-source")
    out = capsys.readouterr().out
    assert code == 1
    assert f"[{path}:" in out or f"{path}:" in out
    assert "== serve: NOT RUN (not run: the scan level failed (--keep-going runs it anyway))" in out
    levels = json.loads((report / "report.json").read_text())["levels"]
    assert levels["serve"]["status"] == "not-run"


def test_a_source_that_is_neither_tree_is_exit_2_and_writes_nothing(tmp_path, capsys):
    code, report = _check(tmp_path, "--levels", "scan", "--source", str(tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [f"syncgate check: error: --source {tmp_path}: neither a vLLM tree (no "
                   "vllm/v1/worker/) nor a vllm-ascend tree (no vllm_ascend/worker/)"]
    assert not report.exists()


def test_unknown_level_is_exit_2(tmp_path, capsys):
    code, _ = _check(tmp_path, "--levels", "scan,lint")
    assert code == 2
    assert "--levels 'scan,lint'" in capsys.readouterr().err


@pytest.mark.slow
def test_npu_profile_scan_and_unit_run_without_an_npu(data_dir, tmp_path, capsys):
    import xml.etree.ElementTree as ET

    code, report = _check(tmp_path, "--device", "npu", "--levels", "scan,unit",
                          "--source", str(data_dir / "npu" / "after_fix"), "--trust-source")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "npu.no_seq_lens_sync_without_speculation" in out
    assert "probes.to_list" in out
    suites = ET.parse(report / "junit.xml").getroot()
    assert [s.get("name") for s in suites] == ["syncgate.scan", "syncgate.unit"]
    assert suites.get("failures") == "0"

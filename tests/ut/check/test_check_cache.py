"""The verdict cache: a key that changes with every input of a level, and a run it answers."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from vllm_syncgate.check import cache as cache_module
from vllm_syncgate.check.cache import CheckCache, FileDigests, VerdictCache, level_keys
from vllm_syncgate.check.levels import ERROR, PASS, LevelCase, LevelResult
from vllm_syncgate.check.overlay import code_under_test
from vllm_syncgate.check.plan import make_plan
from vllm_syncgate.check.source import detect_source

RUNNER = "vllm/v1/worker/gpu_model_runner.py"
LEVELS = ("scan", "unit", "serve")


@pytest.fixture
def keyed(data_dir, tmp_path, monkeypatch):
    """``keys(**changes)``: every level's key for a copy of the data tree, after ``changes``."""
    root = tmp_path / "tree"
    shutil.copytree(data_dir / "check" / "vllm_tree", root)
    plan = make_plan("cpu", None, None, None, str(tmp_path / "report"), need_device=False)
    store = VerdictCache(tmp_path / "cache")
    monkeypatch.setattr(cache_module, "installed_package", lambda package: None)

    def keys(options=None, env=None, model="tiny:abc"):
        source = detect_source(root)
        code = code_under_test(source, "vllm", tmp_path / "ov", build=False)
        return level_keys(LEVELS, [source], code, plan, options or {"device": "cpu"}, model,
                          store, env or {})

    return root, keys


def test_the_same_inputs_give_the_same_keys(keyed):
    _, keys = keyed
    assert keys() == keys()
    assert len(set(keys().values())) == 3  # one per level


def test_a_one_line_edit_of_the_tree_changes_every_key(keyed):
    root, keys = keyed
    before = keys()
    path = root / RUNNER
    path.write_text(path.read_text().replace("torch.cuda.synchronize()", "torch.cuda.synchronize() ", 1))
    after = keys()
    assert all(before[level] != after[level] for level in LEVELS)


def test_settings_options_environment_model_and_versions_are_in_the_key(keyed, monkeypatch):
    root, keys = keyed
    before = keys()
    (root / "pyproject.toml").write_text("[tool.syncgate]\n")
    settings = keys()
    assert settings["scan"] != before["scan"]
    assert keys(options={"device": "cpu", "quick": True})["serve"] != settings["serve"]
    assert keys(env={"VLLM_USE_V2": "1"})["unit"] != settings["unit"]
    assert keys(env={"HOME": "/elsewhere"}) == settings  # not an input
    assert keys(model="tiny:def")["serve"] != settings["serve"]
    assert keys(model="tiny:def")["unit"] == settings["unit"]  # the unit level has no model
    real = cache_module.importlib.metadata.version
    monkeypatch.setattr(cache_module.importlib.metadata, "version",
                        lambda dist: "9.9" if dist == "torch" else real(dist))
    assert all(keys()[level] != settings[level] for level in LEVELS)


def test_file_digests_rehash_what_changed_and_what_is_racy(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("a = 1\n")
    memo = FileDigests(tmp_path / "files.json")
    first = memo.of(path)
    memo.save()
    path.write_text("a = 2\n")  # same size, new mtime
    assert FileDigests(tmp_path / "files.json").of(path) != first
    old = time.time() - 60
    os.utime(path, (old, old))
    memo = FileDigests(tmp_path / "files.json")
    second = memo.of(path)
    memo.save()
    again = FileDigests(tmp_path / "files.json")
    assert again.of(path) == second
    assert not again._dirty  # answered from the memo: the file is older than the memo


def test_cached_levels_come_back_marked_and_only_verdicts_are_kept(tmp_path):
    store = VerdictCache(tmp_path)
    run = CheckCache(store, {"scan": "k1", "unit": "k2"})
    scan = LevelResult("scan", PASS, cases=[LevelCase("R.execute_model", True, "ok")])
    run.store([scan, LevelResult("unit", ERROR, "error: no")], serve=None)
    again = CheckCache(store, {"scan": "k1", "unit": "k2"})
    assert set(again.hits) == {"scan"}  # an error is worked out again
    hit = again.level("scan")
    assert hit.cases == scan.cases
    assert hit.cached_from.endswith(" UTC")
    assert again.level("unit") is None
    (tmp_path / "k1.pickle").write_bytes(b"not a pickle")
    assert CheckCache(store, {"scan": "k1"}).hits == {}  # a broken entry is a miss


def test_check_answers_an_unchanged_tree_from_the_cache_and_reruns_an_edited_one(data_dir,
                                                                                 tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(data_dir / "check" / "vllm_tree", root)
    env = {**os.environ, "SYNCGATE_CACHE_DIR": str(tmp_path / "cache")}

    def check(*extra):
        return subprocess.run([sys.executable, "-m", "vllm_syncgate", "check", "--levels", "scan",
                               "--source", str(root), "--report-dir", str(tmp_path / "r"),
                               *extra], capture_output=True, text=True, timeout=300, env=env)

    cold = check()
    assert cold.returncode == 0, cold.stdout + cold.stderr
    assert "cached" not in cold.stdout + cold.stderr
    warm = check()
    assert warm.returncode == 0
    assert "scan: cached from " in warm.stderr
    assert "== scan: PASS (" in warm.stdout
    assert "; cached from " in warm.stdout
    assert "cached" not in (fresh := check("--no-cache")).stdout + fresh.stderr
    path = root / RUNNER
    path.write_text(path.read_text().replace(
        "        if self.speculative_config is not None:\n            self._wait_for_drafts()",
        "        self._wait_for_drafts()"))
    mutant = check()
    assert "cached" not in mutant.stdout + mutant.stderr  # the edit is a new key
    assert mutant.returncode == 1


def test_a_cached_serve_level_keeps_its_result_and_plot(tmp_path):
    store = VerdictCache(tmp_path / "c")
    png = tmp_path / "syncs_per_step.png"
    png.write_bytes(b"\x89PNG drawn once")
    run = CheckCache(store, {"serve": "k"})
    run.store([LevelResult("serve", PASS)], serve={"scenarios": ["sequential"]}, png=png)
    again = CheckCache(store, {"serve": "k"})
    assert again.serve() == {"scenarios": ["sequential"]}
    assert again.png() == b"\x89PNG drawn once"
    assert again.level("serve").status == PASS
    empty = CheckCache(VerdictCache(tmp_path / "d"), {"serve": "k"})
    empty.store([LevelResult("serve", PASS)], serve=None)  # a serve level without its result
    assert CheckCache(VerdictCache(tmp_path / "d"), {"serve": "k"}).hits == {}

"""Source trees for the shipped NPU property: the after-fix fixture and mutants of it."""

import shutil
from pathlib import Path

import pytest

from vllm_syncgate.npu.harness import AscendSource

AFTER_FIX = Path(__file__).resolve().parents[2] / "data" / "npu" / "after_fix"
RUNNER_FILE = Path("vllm_ascend", "worker", "v2", "model_runner.py")  # the harness's RUNNER_MODULE


@pytest.fixture
def ascend_mutant(tmp_path):
    """A copy of the after-fix tree with one exact piece of its runner source replaced."""

    def make(old, new):
        root = tmp_path / "mutant"
        shutil.copytree(AFTER_FIX, root)
        path = root / RUNNER_FILE
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1
        path.write_text(text.replace(old, new), encoding="utf-8")
        return AscendSource.at(root)

    return make

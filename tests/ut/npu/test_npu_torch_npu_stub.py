"""The torch_npu stand-in: enough for ``vllm_ascend`` imports, removable, never over a real one."""

from __future__ import annotations

import importlib
import sys

import pytest
import torch

from vllm_syncgate.npu import torch_npu_stub


@pytest.fixture
def clean_modules(monkeypatch):
    """Run with no torch_npu/acl in sys.modules and no torch.npu; restore whatever was there."""
    for name in list(sys.modules):
        if name.split(".")[0] in ("torch_npu", "acl"):
            monkeypatch.delitem(sys.modules, name)
    if hasattr(torch, "npu"):
        monkeypatch.delattr(torch, "npu")
    yield
    torch_npu_stub.uninstall()


@pytest.mark.usefixtures("clean_modules")
def test_imports_that_vllm_ascend_makes_succeed():
    stub = torch_npu_stub.install()
    import torch_npu
    from torch_npu._C._distributed_c10d import ProcessGroupHCCL  # noqa: F401
    from torch_npu.npu import current_stream  # noqa: F401

    assert torch_npu is stub
    assert torch_npu.__version__ == torch_npu_stub.STUB_VERSION
    assert importlib.import_module("acl.rt").memcpy is sys.modules["acl.rt"].memcpy
    assert torch.npu.is_available() is False


@pytest.mark.usefixtures("clean_modules")
def test_ops_are_named_mocks_so_a_call_is_visible():
    torch_npu_stub.install()
    import torch_npu

    torch_npu.npu_rms_norm("x", "w")
    torch_npu.npu_rms_norm.assert_called_once_with("x", "w")
    assert "torch_npu.npu_rms_norm" in repr(torch_npu.npu_rms_norm)
    assert torch_npu.npu_rms_norm is torch_npu.npu_rms_norm  # one mock per name


@pytest.mark.usefixtures("clean_modules")
def test_uninstall_removes_only_the_stub():
    torch_npu_stub.install()
    assert torch_npu_stub.install() is sys.modules["torch_npu"]  # idempotent
    torch_npu_stub.uninstall()
    assert "torch_npu" not in sys.modules
    assert "acl.rt" not in sys.modules
    assert not hasattr(torch, "npu")


@pytest.mark.usefixtures("clean_modules")
def test_a_real_torch_npu_is_left_alone(monkeypatch):
    real = type(sys)("torch_npu")
    monkeypatch.setitem(sys.modules, "torch_npu", real)
    assert torch_npu_stub.install() is real
    torch_npu_stub.uninstall()
    assert sys.modules["torch_npu"] is real


@pytest.mark.usefixtures("clean_modules")
@pytest.mark.parametrize("built", [False, True])
def test_build_info_is_stubbed_only_for_an_unbuilt_tree(tmp_path, monkeypatch, built):
    package = tmp_path / "vllm_ascend"
    package.mkdir()
    (package / "__init__.py").write_text("")
    if built:
        (package / "_build_info.py").write_text("__device_type__ = 'A3'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    torch_npu_stub.install()
    stubbed = sys.modules.get("vllm_ascend._build_info")
    if built:
        assert stubbed is None
    else:
        assert stubbed.__device_type__ == "A2"
    torch_npu_stub.uninstall()
    assert "vllm_ascend._build_info" not in sys.modules

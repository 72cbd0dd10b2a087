"""A stand-in ``torch_npu`` so the real ``vllm_ascend`` classes import on a host without an NPU.

Upstream runs its unit tests on plain x86 hosts this way (``COMPILE_CUSTOM_KERNELS=0``,
``TORCH_DEVICE_BACKEND_AUTOLOAD=0``, torch_npu replaced before anything imports it): importing the
real ``torch_npu`` needs the CANN runtime libraries (``libhccl.so`` ...) and a driver. The stub only
has to get ``vllm_ascend`` through its imports; the runner methods under test reach the device
through ``torch.npu``, which the simulated accelerator provides while a test runs.

Every attribute the stub does not define is a ``MagicMock`` named after it, so an op called at
import time (custom-op registration, dtype constants) succeeds and an op called by code under test
is visible in a failure rather than silently computing something.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import torch

STUB_VERSION = "0.0.0+syncgate.stub"
# Modules vllm_ascend imports from torch_npu or the CANN Python bindings.
_MODULES = (
    "torch_npu",
    "torch_npu.npu",
    "torch_npu._C",
    "torch_npu._C._distributed_c10d",
    "torch_npu.profiler",
    "torch_npu.op_plugin",
    "acl",
    "acl.rt",
)


class _StubModule(types.ModuleType):
    """A module whose unknown attributes are named mocks (created once, then kept)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = MagicMock(name=f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


def _module(name: str) -> _StubModule:
    module = _StubModule(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, loader=None, is_package=True)
    module.__path__ = []
    module.__syncgate_stub__ = True
    return module


def is_stub(module: object) -> bool:
    return bool(getattr(module, "__syncgate_stub__", False))


def install() -> types.ModuleType:
    """Put the stubs in ``sys.modules`` (idempotent) and name torch's private backend ``npu`` as
    torch_npu would; returns the ``torch_npu`` stub. A real torch_npu already imported is left
    alone and returned. Besides torch_npu and CANN's ``acl``, like upstream's UT set-up: Triton's
    device query (no NPU to ask), the Mooncake transfer engine, and ``vllm_ascend._build_info``
    when the tree was never built; each only when the real one is absent."""
    present = sys.modules.get("torch_npu")
    if present is not None:
        return present
    modules = {name: _module(name) for name in _MODULES}
    for name, module in modules.items():
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(modules[parent], child, module)
    root = modules["torch_npu"]
    root.__version__ = STUB_VERSION
    npu = modules["torch_npu.npu"]
    npu.is_available = lambda: False
    npu.device_count = lambda: 0
    if importlib.util.find_spec("triton") is not None and "triton.runtime" not in sys.modules:
        runtime = _module("triton.runtime")
        runtime.driver.active.utils.get_device_properties.return_value = {
            "num_aic": 8, "num_vectorcore": 8,
        }
        modules["triton.runtime"] = runtime
    if importlib.util.find_spec("mooncake") is None:
        modules["mooncake"] = _module("mooncake")
        modules["mooncake.engine"] = _module("mooncake.engine")
    if not _built("vllm_ascend"):
        build_info = _module("vllm_ascend._build_info")
        build_info.__device_type__ = "A2"
        modules["vllm_ascend._build_info"] = build_info
    sys.modules.update(modules)
    _installed.update(modules)
    register_npu_device_name()
    if not hasattr(torch, "npu"):
        torch.npu = npu  # what torch_npu's import does; the simulator overrides it while active
    return root


_installed: dict[str, types.ModuleType] = {}


def _built(package: str) -> bool:
    """Whether ``package`` has its build-time ``_build_info.py`` (found without importing it)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return True  # not installed here: nothing will import its build info
    return any(Path(p, "_build_info.py").is_file() for p in spec.submodule_search_locations)


def uninstall() -> None:
    """Remove the stub modules (only those still in place) and the ``torch.npu`` the stub set."""
    for name, module in _installed.items():
        if sys.modules.get(name) is module:
            del sys.modules[name]
    _installed.clear()
    if is_stub(getattr(torch, "npu", None)):
        del torch.npu


def register_npu_device_name() -> None:
    """``torch.device("npu")`` parses only once the private-use backend is named ``npu``."""
    if torch._C._get_privateuse1_backend_name() != "npu":
        torch.utils.rename_privateuse1_backend("npu")

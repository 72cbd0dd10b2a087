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
import sys
import types
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
    """Put the stub modules in ``sys.modules`` (idempotent) and name torch's private backend
    ``npu`` as torch_npu would; returns the ``torch_npu`` stub. A real torch_npu already imported
    is left alone and returned."""
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
    sys.modules.update(modules)
    register_npu_device_name()
    if not hasattr(torch, "npu"):
        torch.npu = npu  # what torch_npu's import does; the simulator overrides it while active
    return root


def uninstall() -> None:
    """Remove the stub modules (only stubs) and the ``torch.npu`` the stub set."""
    for name in _MODULES:
        if is_stub(sys.modules.get(name)):
            del sys.modules[name]
    if is_stub(getattr(torch, "npu", None)):
        del torch.npu


def register_npu_device_name() -> None:
    """``torch.device("npu")`` parses only once the private-use backend is named ``npu``."""
    if torch._C._get_privateuse1_backend_name() != "npu":
        torch.utils.rename_privateuse1_backend("npu")

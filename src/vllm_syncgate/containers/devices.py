"""Device specs: how a GPU or NPU reaches a container, as data, rendered for compose and docker run.

The compose snippet for NVIDIA GPUs and vllm-ascend's quick-start ``docker run`` line live in
different documents and drift; here both are generated from one table (``devices.toml``), the
compose file is tested against it, and the host is checked for the device nodes and driver paths
*before* a container starts, so a missing driver is one readable line, not a crash inside the
image.

``python -m vllm_syncgate.containers.devices check npu --ids 0`` exits 2 naming what is missing;
``python -m vllm_syncgate.containers.devices run-args npu --ids 0,1`` prints the ``docker run`` flags.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import EXIT_OK, ConfigError, EnvironmentProblem, SyncgateError, UsageError
from vllm_syncgate.tomlfile import read_toml, reject_unknown_keys

_KEYS = {"image", "dockerfile", "id_variable", "device_nodes", "mounts", "probe_paths", "gpu_driver",
         "shm_size", "ipc", "network_mode"}
_PATH_LISTS = ("device_nodes", "mounts", "probe_paths")


@dataclass(frozen=True)
class DeviceSpec:
    """One device kind's container needs (see ``devices.toml`` for the meaning of each field)."""

    name: str
    image: str
    dockerfile: str
    id_variable: str | None = None
    device_nodes: tuple[str, ...] = ()
    mounts: tuple[str, ...] = ()
    probe_paths: tuple[str, ...] = ()
    gpu_driver: str | None = None
    shm_size: str | None = None
    ipc: str | None = None
    network_mode: str | None = None

    def nodes(self, ids: Iterable[str]) -> list[str]:
        """Device files for these ids: per-id nodes first (in id order), then shared ones."""
        return _expand(self.device_nodes, ids)

    def compose_fields(self) -> dict[str, Any]:
        """The device part of a compose service; the id comes from ``id_variable`` (default 0)."""
        selected = f"${{{self.id_variable}:-0}}" if self.id_variable else "0"
        fields: dict[str, Any] = {}
        nodes = self.nodes([selected])
        if nodes:
            fields["devices"] = [f"{n}:{n}" for n in nodes]
        if self.mounts:
            fields["volumes"] = [f"{m}:{m}:ro" for m in self.mounts]
        if self.gpu_driver:
            fields["deploy"] = {"resources": {"reservations": {"devices": [{
                "driver": self.gpu_driver, "device_ids": [selected], "capabilities": ["gpu"]}]}}}
        if self.shm_size:
            fields["shm_size"] = self.shm_size
        if self.ipc:
            fields["ipc"] = self.ipc
        if self.network_mode:
            fields["network_mode"] = self.network_mode
        return fields

    def run_args(self, ids: Sequence[str]) -> list[str]:
        """``docker run`` flags giving a container the devices ``ids``."""
        args: list[str] = []
        for node in self.nodes(ids):
            args += ["--device", node]
        for mount in self.mounts:
            args += ["-v", f"{mount}:{mount}:ro"]
        if self.gpu_driver:
            args += ["--gpus", f'"device={",".join(ids)}"']
        if self.shm_size:
            args += ["--shm-size", self.shm_size]
        if self.ipc:
            args += [f"--ipc={self.ipc}"]
        if self.network_mode:
            args += [f"--network={self.network_mode}"]
        return args

    def missing_on_host(self, ids: Sequence[str], root: Path = Path("/")) -> list[str]:
        """Device nodes and driver paths this host lacks (``root`` lets tests use a fake tree)."""
        wanted = [*self.nodes(ids), *self.mounts, *_expand(self.probe_paths, ids)]
        return [p for p in wanted if not (root / p.lstrip("/")).exists()]


def _expand(paths: Iterable[str], ids: Iterable[str]) -> list[str]:
    ids = list(ids)
    per_id = [p.format(id=i) for p in paths if "{id}" in p for i in ids]
    return per_id + [p for p in paths if "{id}" not in p]


def _spec(name: str, table: object, source: str) -> DeviceSpec:
    if not isinstance(table, dict):
        raise ConfigError(source, name, "expected a table")
    reject_unknown_keys(table, _KEYS, where=name, source=source)
    for key in ("image", "dockerfile"):
        if not isinstance(table.get(key), str):
            raise ConfigError(source, f"{name}.{key}", "required string is missing")
    lists = {k: table.get(k, []) for k in _PATH_LISTS}
    for key, value in lists.items():
        if not (isinstance(value, list) and all(isinstance(v, str) and v.startswith("/")
                                                 for v in value)):
            raise ConfigError(source, f"{name}.{key}", "expected a list of absolute paths")
    return DeviceSpec(name=name, **{**table, **{k: tuple(v) for k, v in lists.items()}})


def load_device_specs(path: Path | None = None) -> dict[str, DeviceSpec]:
    """Read a device table (default: the packaged ``devices.toml``)."""
    source = path if path is not None else resources.files("vllm_syncgate.containers") / "devices.toml"
    data = read_toml(source)
    return {name: _spec(name, table, str(source)) for name, table in data.items()}


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m vllm_syncgate.containers.devices",
                                     description="Check or render a device's container needs.")
    parser.add_argument("action", choices=("check", "run-args"))
    parser.add_argument("device")
    parser.add_argument("--ids", default="0", help="comma-separated device ids (default 0)")
    return parser.parse_args(argv)


def host_command(action: str, device: str, ids_text: str) -> str:
    """``check``: the line saying the host is ready, else :class:`EnvironmentProblem` naming
    the first missing host path; ``run-args``: the ``docker run`` flags."""
    specs = load_device_specs()
    if device not in specs:
        raise UsageError(f"device {device!r}: expected one of {', '.join(specs)}")
    spec = specs[device]
    ids = [i.strip() for i in ids_text.split(",")]
    if not all(i.isascii() and i.isdigit() for i in ids):  # not '²' or '٣': /dev/davinci٣
        raise UsageError(f"--ids {ids_text!r}: expected comma-separated integers")
    if action == "run-args":
        return shlex.join(spec.run_args(ids))
    missing = spec.missing_on_host(ids)
    if missing:
        raise EnvironmentProblem(
            f"{device} host is not ready: missing {', '.join(missing)} "
            "(is the driver installed and are the device ids right?)")
    return f"{device}: the device nodes and driver paths for ids {ids_text} are present"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m`` entry (``syncgate devices`` is the same): exit 2 on a missing host path."""
    args = _parse_args(argv)
    try:
        print(host_command(args.action, args.device, args.ids))
        return EXIT_OK
    except SyncgateError as exc:
        print(f"syncgate devices: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())

"""Does compose.yaml agree with the device specs, the images and the device profiles?

Three sources describe one run: ``devices.toml`` (how the device reaches the container), the
Dockerfiles (image environment: where caches and reports live) and the device profiles (serve
environment, model). A service that drifts from them fails in the worst place, on the accelerator
host; this check runs offline in CI instead and names each disagreement.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from vllm_syncgate.containers.devices import DeviceSpec
from vllm_syncgate.profiles import Profile

_ENV_LINE = re.compile(r"^\s*ENV\s+(.*)$")


def dockerfile_env(text: str) -> dict[str, str]:
    """The ``ENV KEY=VALUE`` pairs of a Dockerfile, later stages overriding earlier ones."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.lstrip().startswith("#") and not pending:
            continue
        line = pending + raw.rstrip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        logical.append(line)
    env: dict[str, str] = {}
    for line in logical:
        match = _ENV_LINE.match(line)
        if match:
            for token in shlex.split(match.group(1)):
                key, sep, value = token.partition("=")
                if sep:
                    env[key] = value
    return env


def _service_env(service: Mapping[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # the KEY=VALUE list form
        return dict(item.partition("=")[::2] for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _mount_targets(service: Mapping[str, Any]) -> set[str]:
    targets = set()
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            # SOURCE:TARGET[:MODE]; a source may hold "${VAR:-default}", which has its own colon.
            parts = re.sub(r"\$\{[^}]*\}", "VAR", volume).split(":")
            targets.add(parts[1] if len(parts) > 1 else parts[0])
        else:
            targets.add(volume.get("target", ""))
    return targets


def _as_list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def service_problems(name: str, service: Mapping[str, Any], spec: DeviceSpec,
                     image_env: Mapping[str, str], profile: Profile) -> list[str]:
    """Disagreements of one ``e2e-<device>`` service with its spec, image and profile."""
    problems: list[str] = []
    where = f"services.{name}"
    if service.get("image") != spec.image:
        problems.append(f"{where}.image: {service.get('image')!r}, the spec says {spec.image!r}")
    dockerfile = (service.get("build") or {}).get("dockerfile")
    if dockerfile != spec.dockerfile:
        problems.append(f"{where}.build.dockerfile: {dockerfile!r}, the spec says "
                        f"{spec.dockerfile!r}")
    for key, wanted in spec.compose_fields().items():
        have = service.get(key)
        if isinstance(wanted, list):
            missing = [w for w in wanted if w not in _as_list(have or [])]
            if missing:
                problems.append(f"{where}.{key}: missing {', '.join(map(str, missing))}")
        elif have != wanted:
            problems.append(f"{where}.{key}: {have!r}, the spec says {wanted!r}")
    env = {**image_env, **_service_env(service)}
    if env.get("SYNCGATE_DEVICE") != profile.device:
        problems.append(f"{where}: SYNCGATE_DEVICE is {env.get('SYNCGATE_DEVICE')!r}, the "
                        f"{profile.device} profile runs there")
    if _as_list(service.get("command")) != ["check"]:
        problems.append(f"{where}.command: {service.get('command')!r}, expected ['check'] "
                        "(the gate runs `syncgate check` with the profile)")
    for key, value in profile.env.items():
        if key in env and env[key] != value:
            problems.append(f"{where}: {key}={env[key]!r} overrides the profile's {value!r} "
                            f"({profile.source})")
    targets = _mount_targets(service)
    for var in ("SYNCGATE_REPORT_DIR", "SYNCGATE_CACHE_DIR"):
        path = env.get(var)
        if path is None:
            problems.append(f"{where}: {var} is not set by the image or the service")
        elif path not in targets:
            problems.append(f"{where}.volumes: nothing is mounted at {var}={path}, so "
                            f"{'reports' if 'REPORT' in var else 'models'} are lost with "
                            "the container")
    if profile.model.startswith("/") and not any(
            profile.model == t or profile.model.startswith(t.rstrip("/") + "/") for t in targets):
        problems.append(f"{where}.volumes: the profile's model {profile.model} is on no mount")
    return problems

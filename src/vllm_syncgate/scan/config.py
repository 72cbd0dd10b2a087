"""The scan's name patterns (entry points, guard names, host-side names), read from TOML.

They are data, not code, because every upstream rename (a new speculation flag, a new runner
class) should be a one-line change that a reviewer can read without knowing the scanner.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import ConfigError
from vllm_syncgate.tomlfile import read_toml, reject_unknown_keys

_SCHEMA: dict[str, tuple[str, ...]] = {
    "entries": ("classes", "methods", "skip_classes", "follow_imports", "follow_packages",
                "follow_ops", "dispatch_receivers", "dispatch_classes", "op_methods",
                "forward_methods", "layer_modules", "model_receivers", "model_modules",
                "model_interface", "model_factories", "sampler_classes", "text_configs",
                "multimodal_interfaces"),
    "guards": ("speculation", "one_without_speculation", "async_scheduling", "warmup",
               "warmup_functions", "allowed_contexts", "opt_in", "one_by_default",
               "default_implementations", "switched", "config_hooks", "family_off"),
    "values": ("host", "device", "device_modules", "device_records", "context_records",
               "arithmetic"),
}

# Keys added after the first release: a config written before them stays valid.
_OPTIONAL = frozenset(
    {"one_without_speculation", "device_modules", "skip_classes", "opt_in", "one_by_default",
     "follow_imports", "follow_packages", "dispatch_receivers", "dispatch_classes", "default_implementations",
     "follow_ops", "op_methods", "forward_methods", "layer_modules", "device_records", "switched",
     "context_records", "arithmetic", "config_hooks", "family_off", "model_receivers",
     "model_modules", "model_interface", "model_factories", "sampler_classes", "text_configs",
     "multimodal_interfaces"}
)


class Patterns:
    """fnmatch globs compiled into one regular expression, with answers cached per name:
    ``match`` is the cache's own lookup (asked ~160k times a scan), computing only a new name."""

    def __init__(self, globs: tuple[str, ...]) -> None:
        self.globs = globs
        self._regex = re.compile("|".join(fnmatch.translate(g) for g in globs) or "(?!)")
        self.match: Callable[[str], bool] = _Answers(self._regex).__getitem__


class _Answers(dict):
    """name -> whether the regular expression matches it, computed on first lookup."""

    def __init__(self, regex: re.Pattern[str]) -> None:
        super().__init__()
        self.regex = regex

    def __missing__(self, name: str) -> bool:
        hit = self[name] = self.regex.match(name) is not None
        return hit


@dataclass(frozen=True, eq=False)
class ScanConfig:
    entry_classes: Patterns
    entry_methods: tuple[str, ...]
    skip_classes: Patterns
    follow_imports: Patterns
    follow_packages: Patterns
    follow_ops: Patterns
    dispatch_receivers: Patterns
    dispatch_classes: Patterns
    speculation: Patterns
    one_without_speculation: Patterns
    async_scheduling: Patterns
    warmup: Patterns
    opt_in: Patterns
    one_by_default: Patterns
    default_implementations: Patterns
    warmup_functions: Patterns
    allowed_contexts: Patterns
    host: Patterns
    device: Patterns
    device_modules: Patterns
    op_methods: Patterns = field(default_factory=lambda: Patterns(()))
    device_records: Patterns = field(default_factory=lambda: Patterns(()))
    arithmetic: Patterns = field(default_factory=lambda: Patterns(()))
    forward_methods: Patterns = field(default_factory=lambda: Patterns(()))
    layer_modules: Patterns = field(default_factory=lambda: Patterns(()))
    model_receivers: Patterns = field(default_factory=lambda: Patterns(()))
    model_modules: Patterns = field(default_factory=lambda: Patterns(()))
    model_interface: Patterns = field(default_factory=lambda: Patterns(()))
    model_factories: Patterns = field(default_factory=lambda: Patterns(()))
    sampler_classes: Patterns = field(default_factory=lambda: Patterns(()))
    text_configs: Patterns = field(default_factory=lambda: Patterns(()))
    multimodal_interfaces: Patterns = field(default_factory=lambda: Patterns(()))
    # torch's ``__setitem__`` keeps a Python number on the host for this device's tensors, so
    # ``x[mask] = 0`` is a ``masked_fill_`` (CUDA, and the CPU), not an ``index_put_`` that
    # reads the mask back: set by :func:`vllm_syncgate.scan.callgraph.scan` from the device
    host_scalar_fill: bool = False
    # an op class's methods the device runs, first defined wins: the budget's ``dispatch``
    # (``forward_oot`` on Ascend), set by :func:`vllm_syncgate.scan.callgraph.scan`
    op_dispatch: tuple[str, ...] = ()
    # ``switch=glob``: values named by the glob exist only with the config switch's feature on
    switched: tuple[str, ...] = ()
    # methods where a platform rewrites the config it is handed (``check_and_update_config``)
    config_hooks: Patterns = field(default_factory=lambda: Patterns(()))
    # ``ClassGlob=switch``: in that model family's classes the run-time switch is off
    family_off: tuple[str, ...] = ()
    # (field, value) the scanned platforms' hooks force on the config, set by
    # :func:`vllm_syncgate.scan.callgraph.scan`: they win over the config's own defaults
    config_overrides: tuple[tuple[str, bool], ...] = ()
    # environment variables a scanned module sets itself, set by
    # :func:`vllm_syncgate.scan.callgraph.scan`: a read of one is not its unset default
    environment_set: frozenset[str] = frozenset()
    # ``call.field``: that field of what ``call()`` returns holds device records (by layer)
    context_records: tuple[str, ...] = ()
    # the scanned tree's own config modules (its defaults judge its switches), set by
    # :func:`vllm_syncgate.scan.callgraph.scan`; empty: the installed vLLM's
    config_sources: tuple[str, ...] = ()


def packaged_table(name: str) -> dict[str, Any]:
    """A data table shipped with the scan (``scan/<name>``): the operator and tensor-method
    lists that the rules and the value model read."""
    return read_toml(resources.files("vllm_syncgate") / "scan" / name)


def default_config_path() -> Path:
    return Path(str(resources.files("vllm_syncgate") / "scan" / "defaults.toml"))


def load_config(path: str | Path | None = None) -> ScanConfig:
    """Read and validate a scan config (the packaged defaults when ``path`` is None)."""
    path = Path(path) if path is not None else default_config_path()
    return parse_config(read_toml(path), str(path))


def parse_config(data: dict[str, Any], source: str) -> ScanConfig:
    values: dict[str, tuple[str, ...]] = {}
    for table, keys in _SCHEMA.items():
        section = data.get(table)
        if not isinstance(section, dict):
            raise ConfigError(source, table, "missing table")
        reject_unknown_keys(section, keys, where=table, source=source)
        for key in keys:
            raw = section.get(key, [] if key in _OPTIONAL else None)
            if not isinstance(raw, list) or not all(isinstance(v, str) and v for v in raw):
                raise ConfigError(source, f"{table}.{key}", "must be a list of non-empty strings")
            values[key] = tuple(raw)
    bad = next((v for v in values["context_records"] if not re.fullmatch(r"\w+\.\w+", v)), None)
    if bad is not None:
        raise ConfigError(source, "values.context_records", f"{bad!r} is not 'call.field'")
    bad = next((v for v in values["switched"] if not re.fullmatch(r"\w+=\S+", v)), None)
    if bad is not None:
        raise ConfigError(source, "guards.switched", f"{bad!r} is not 'switch=glob'")
    bad = next((v for v in values["family_off"] if not re.fullmatch(r"\S+=\w+", v)), None)
    if bad is not None:
        raise ConfigError(source, "guards.family_off", f"{bad!r} is not 'ClassGlob=switch'")
    unknown_tables = set(data) - set(_SCHEMA)
    if unknown_tables:
        raise ConfigError(source, sorted(unknown_tables)[0], "unknown table")
    return ScanConfig(
        entry_classes=Patterns(values["classes"]),
        entry_methods=values["methods"],
        skip_classes=Patterns(values["skip_classes"]),
        follow_imports=Patterns(values["follow_imports"]),
        follow_packages=Patterns(values["follow_packages"]),
        follow_ops=Patterns(values["follow_ops"]),
        dispatch_receivers=Patterns(values["dispatch_receivers"]),
        dispatch_classes=Patterns(values["dispatch_classes"]),
        speculation=Patterns(values["speculation"]),
        one_without_speculation=Patterns(values["one_without_speculation"]),
        async_scheduling=Patterns(values["async_scheduling"]),
        warmup=Patterns(values["warmup"]),
        opt_in=Patterns(values["opt_in"]),
        one_by_default=Patterns(values["one_by_default"]),
        default_implementations=Patterns(values["default_implementations"]),
        warmup_functions=Patterns(values["warmup_functions"]),
        allowed_contexts=Patterns(values["allowed_contexts"]),
        host=Patterns(values["host"]),
        device=Patterns(values["device"]),
        device_modules=Patterns(values["device_modules"]),
        op_methods=Patterns(values["op_methods"]),
        forward_methods=Patterns(values["forward_methods"]),
        layer_modules=Patterns(values["layer_modules"]),
        model_receivers=Patterns(values["model_receivers"]),
        model_modules=Patterns(values["model_modules"]),
        model_interface=Patterns(values["model_interface"]),
        model_factories=Patterns(values["model_factories"]),
        sampler_classes=Patterns(values["sampler_classes"]),
        text_configs=Patterns(values["text_configs"]),
        multimodal_interfaces=Patterns(values["multimodal_interfaces"]),
        device_records=Patterns(values["device_records"]),
        arithmetic=Patterns(values["arithmetic"]),
        switched=values["switched"],
        config_hooks=Patterns(values["config_hooks"]),
        family_off=values["family_off"],
        context_records=values["context_records"],
    )

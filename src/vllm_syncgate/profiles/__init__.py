"""Device profiles: everything device-specific about a serve run, as TOML data.

A profile names the device, the runner it expects, the model (an embedded recipe or a path), the
budget file, the parity mode, the base ``vllm serve`` flags and environment, and the *groups*:
flag sets that each get one server and a list of scenarios. See ``cpu.toml`` for a commented one.
Any problem is a :class:`~vllm_syncgate.errors.ProfileError` naming the file and the key.

Loading resolves what the file names, once: a relative model directory or budget file against
the profile's own directory, a built-in budget name to its file, the tolerance table to a
:class:`~vllm_syncgate.parity.Tolerance`. Users of a :class:`Profile` never resolve them again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from vllm_syncgate.audit.budgets import builtin_budget_path
from vllm_syncgate.errors import BudgetError, ProfileError
from vllm_syncgate.parity.compare import Tolerance
from vllm_syncgate.serve.flags import reserved_flag
from vllm_syncgate.tomlfile import read_toml, reject_unknown_keys

DEVICES = ("cpu", "cuda", "npu")
PARITY_MODES = ("exact", "logprob")
_TOP_KEYS = {
    "device", "runner", "model", "budgets", "parity", "seed", "startup_timeout_s",
    "request_timeout_s", "tolerance", "env", "serve", "group", "prestart", "quick",
}
AUTO = "auto"  # prestart: as many servers at once as cores and memory allow (check.run)
_GROUP_KEYS = {"name", "flags", "env", "scenarios", "speculation", "note"}


@dataclass(frozen=True)
class Group:
    """One server flag set and the scenarios run against it."""

    name: str
    flags: tuple[str, ...]
    scenarios: tuple[str, ...]
    speculation: bool = False
    env: dict[str, str] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Profile:
    device: str
    runner: str
    model: str  # as written: an embedded recipe's name or a model directory
    recipe: str | None  # the embedded recipe, or None
    model_dir: Path | None  # the model directory, resolved; None for a recipe
    budgets: str  # as written: a built-in budget name or a .toml file
    budget_file: Path  # resolved
    parity: str
    seed: int
    startup_timeout_s: float
    request_timeout_s: float
    tolerance: Tolerance
    env: dict[str, str]
    flags: tuple[str, ...]
    groups: tuple[Group, ...]
    source: str
    prestart: int | str = 0  # servers booting ahead of the one in use, or AUTO
    quick: tuple[str, ...] = ()  # ``syncgate check --quick``: scenarios of one group

    def group_flags(self, group: Group) -> list[str]:
        return [*self.flags, *group.flags]

    def group_env(self, group: Group) -> dict[str, str]:
        return {**self.env, **group.env}

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "device": self.device,
            "runner": self.runner,
            "model": self.model,
            "budgets": self.budgets,
            "parity": self.parity,
            "seed": self.seed,
            "prestart": self.prestart,
            "quick": list(self.quick),
            "flags": list(self.flags),
            "env": self.env,
            "groups": [
                {"name": g.name, "flags": list(g.flags), "speculation": g.speculation,
                 "scenarios": list(g.scenarios), "note": g.note}
                for g in self.groups
            ],
        }


def quick_group(groups: tuple[Group, ...], quick: tuple[str, ...] | list[str]) -> Group | None:
    """The first group that has every quick scenario: the one server ``--quick`` starts."""
    return next((g for g in groups if set(quick) <= set(g.scenarios)), None)


def builtin_profile_path(device: str) -> Path:
    return Path(str(resources.files("vllm_syncgate.profiles") / f"{device}.toml"))


def load_profile(path: str | Path) -> Profile:
    path = Path(path)
    return parse_profile(read_toml(path, ProfileError), str(path))


def parse_profile(data: dict[str, Any], source: str) -> Profile:
    def need(key: str, kind: type | tuple[type, ...], where: dict[str, Any] = data,
             prefix: str = "") -> Any:
        if key not in where:
            raise ProfileError(source, prefix + key, "missing")
        value = where[key]
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise ProfileError(source, prefix + key, f"must be {_kind_name(kind)}, got {value!r}")
        if not isinstance(value, kind):
            raise ProfileError(source, prefix + key, f"must be {_kind_name(kind)}, got {value!r}")
        return value

    reject_unknown_keys(data, _TOP_KEYS, where="", source=source, error=ProfileError)
    device = need("device", str)
    if device not in DEVICES:
        raise ProfileError(source, "device", f"must be one of {', '.join(DEVICES)}")
    parity = need("parity", str)
    if parity not in PARITY_MODES:
        raise ProfileError(source, "parity", f"must be one of {', '.join(PARITY_MODES)}")
    serve = need("serve", dict)
    flags = _flags(need("flags", list, serve, "serve."), "serve.flags", source)
    tolerance = _tolerance(data.get("tolerance", {}), source)
    groups_raw = need("group", list)
    if not groups_raw:
        raise ProfileError(source, "group", "needs at least one [[group]]")
    groups = tuple(_group(g, f"group[{i}]", source) for i, g in enumerate(groups_raw))
    names = [g.name for g in groups]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ProfileError(source, f"group[{i}].name", f"duplicate group {name!r}")
    prestart = data.get("prestart", 0)
    if prestart != AUTO and (isinstance(prestart, bool) or not isinstance(prestart, int)
                             or prestart < 0):
        raise ProfileError(source, "prestart",
                           f"must be a non-negative integer or {AUTO!r}, got {prestart!r}")
    quick = data.get("quick", [])
    if not isinstance(quick, list) or not all(isinstance(q, str) for q in quick):
        raise ProfileError(source, "quick", f"must be a list of scenario names, got {quick!r}")
    timeouts = {}
    for key in ("startup_timeout_s", "request_timeout_s"):
        value = need(key, (int, float))
        if not math.isfinite(value) or value <= 0:
            raise ProfileError(source, key, f"must be positive and finite, got {value}")
        timeouts[key] = float(value)
    model = need("model", str)
    budgets = need("budgets", str)
    from vllm_syncgate.models.recipe import ARCHES  # models/ imports what a scan never needs

    recipe = model if model in ARCHES else None
    return Profile(
        device=device,
        runner=need("runner", str),
        model=model,
        recipe=recipe,
        model_dir=None if recipe else _beside(source, model),
        budgets=budgets,
        budget_file=_budget_file(budgets, source),
        parity=parity,
        seed=need("seed", int),
        tolerance=tolerance,
        env=_env(data.get("env", {}), "env", source),
        flags=flags,
        groups=groups,
        source=source,
        prestart=prestart,
        quick=tuple(quick),
        **timeouts,
    )


def _beside(source: str, path: str) -> Path:
    """``path`` as written, relative to the profile file's directory unless absolute."""
    return Path(source).parent / path  # an absolute ``path`` replaces the directory


def _budget_file(budgets: str, source: str) -> Path:
    if budgets.endswith(".toml"):
        return _beside(source, budgets)
    try:
        return builtin_budget_path(budgets)
    except BudgetError:
        raise ProfileError(source, "budgets", f"no built-in budget {budgets!r} (or name a "
                           ".toml file)") from None


def _tolerance(raw: Any, source: str) -> Tolerance:
    if not isinstance(raw, dict) or set(raw) - {"max_rank", "max_gap"}:
        raise ProfileError(source, "tolerance", "must be a table with max_rank and/or max_gap")
    rank, gap = raw.get("max_rank", Tolerance.max_rank), raw.get("max_gap", Tolerance.max_gap)
    if isinstance(rank, bool) or not isinstance(rank, int | float) or rank != int(rank):
        raise ProfileError(source, "tolerance.max_rank", f"must be an integer, got {rank!r}")
    if isinstance(gap, bool) or not isinstance(gap, int | float):
        raise ProfileError(source, "tolerance.max_gap", f"must be a number, got {gap!r}")
    return Tolerance(max_rank=int(rank), max_gap=float(gap))


def _group(raw: Any, where: str, source: str) -> Group:
    if not isinstance(raw, dict):
        raise ProfileError(source, where, "must be a table ([[group]])")
    reject_unknown_keys(raw, _GROUP_KEYS, where=where, source=source, error=ProfileError)
    name = raw.get("name")
    if not isinstance(name, str) or not name or "/" in name:
        raise ProfileError(source, f"{where}.name", "must be a non-empty name without '/'")
    scenarios = raw.get("scenarios")
    if not isinstance(scenarios, list) or not scenarios or not all(
        isinstance(s, str) for s in scenarios
    ):
        raise ProfileError(source, f"{where}.scenarios", "must be a non-empty list of names")
    speculation = raw.get("speculation", False)
    if not isinstance(speculation, bool):
        raise ProfileError(source, f"{where}.speculation", "must be true or false")
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise ProfileError(source, f"{where}.note", "must be a string")
    return Group(
        name=name,
        flags=_flags(raw.get("flags", []), f"{where}.flags", source),
        scenarios=tuple(scenarios),
        speculation=speculation,
        env=_env(raw.get("env", {}), f"{where}.env", source),
        note=note,
    )


def _flags(raw: Any, where: str, source: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
        raise ProfileError(source, where, "must be a list of strings")
    for flag in raw:
        option = reserved_flag(flag)
        if option is not None:
            raise ProfileError(source, where, f"{flag} would set {option}, which is set by syncgate "
                               "(loopback, free port)" if option != "--config" else
                               f"{flag}: a --config file could set the host or port")
    return tuple(raw)


def _env(raw: Any, where: str, source: str) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ProfileError(source, where, "must be a table of string values")
    return dict(raw)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", float: "a number", list: "a list",
             dict: "a table", bool: "true or false"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)

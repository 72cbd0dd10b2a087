"""Per-step sync budgets, read from TOML.

A budget file belongs to one device profile and holds one ``[[budget]]`` per (runner,
speculation) pair. Limits are counts per step for each sync kind: ``[budget.limits.default]``
applies to every step kind, ``[budget.limits.decode]`` (or prefill, mixed, empty) overrides it; a
kind left out of ``default`` may not occur at all. Allow-listed sites (``module:qualname``, glob
patterns allowed) are by design and never count. The scan level reads the same allow-lists.

An allow rule follows the code's structure where it says so:

- ``overrides = true``: the rule also covers the same-named method of a subclass that overrides
  the named one (through ``type(self).__mro__``, recorded with each event), because that override
  has the same role on another stack (``CPUModelRunner._to_list`` for ``GPUModelRunner._to_list``).
  Such a rule must name ``kind`` and ``max_per_step``: an override may wait the way the method it
  overrides does, as often, and anything it adds (a device synchronize, a second wait) still counts.
- ``logprobs_only = true``: the rule applies only in steps that serve a request asking for sample
  logprobs (the worker journals how many per step); in every other step the site counts.

A file of your own can start from a built-in one (``extends = "cuda"``, or a ``.toml`` path
beside it) and add only what differs: each of its ``[[budget]]`` tables merges into the base's
budget of the same runner and speculation mode (``runner = "*"``, the default: every runner of
that mode), its allow rules added to the base's, its limits overriding the base's per kind::

    extends = "cuda"
    [[budget]]
    speculation = false
    [[budget.allow]]
    site = "vllm.v1.worker.gpu_model_runner:GPUModelRunner._encoder_timing"
    kind = "device_sync"
    reason = "opt-in encoder timing, off unless --collect-timing"

A file the scan cannot read fails a gate-mode scan unless excluded with a reason
(``[[exclude]]`` with ``path``, a glob on the file's path, and ``reason``).

``dispatch`` says which of an op class's per-platform methods the device runs (vLLM's
``CustomOp.dispatch_forward``: ``forward_oot`` on an out-of-tree platform such as Ascend,
``forward_cuda`` on CUDA, ``forward_cpu`` on the CPU; the first one an op class defines wins,
``forward_native`` being what the others fall back to). The scan follows the op's forward there;
a file that ``extends`` another inherits it.

Example::

    profile = "cuda"

    [[budget]]
    runner = "v1"
    speculation = false
    [budget.limits.default]
    event_sync = 1
    [[budget.allow]]
    site = "vllm.v1.worker.gpu_model_runner:GPUModelRunner._to_list"
    kind = "event_sync"
    max_per_step = 1
    reason = "the documented transfer wait"
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from vllm_syncgate.audit.events import SYNC_KINDS, StepKind, SyncEvent
from vllm_syncgate.audit.exclusions import Exclusion, parse_exclusions
from vllm_syncgate.errors import BudgetError
from vllm_syncgate.tomlfile import read_toml, reject_unknown_keys

RUNNERS = ("v1", "v2", "*")
_LIMIT_TABLES = ("default", *(k.value for k in StepKind if k is not StepKind.OUTSIDE))
_BUDGET_KEYS = {"runner", "speculation", "note", "limits", "allow"}
_ALLOW_KEYS = {"site", "kind", "api", "reason", "max_per_step", "overrides", "logprobs_only"}


@dataclass(frozen=True)
class AllowRule:
    """A by-design sync: matched by ``module:qualname`` glob, optionally narrowed by kind or API."""

    site: str
    reason: str
    kind: str | None = None
    api: str | None = None
    max_per_step: int | None = None  # by design once per step: a second wait there counts
    overrides: bool = False  # also the overrides of the named method in subclasses (same role)
    logprobs_only: bool = False  # only in steps serving a request that asked for logprobs
    source: str = field(default="", compare=False)  # the file that wrote it (unused-rule warnings)

    def matches(self, event: SyncEvent, logprob_step: bool = False) -> bool:
        if self.logprobs_only and not logprob_step:
            return False
        if self.kind is not None and event.kind.value != self.kind:
            return False
        if self.api is not None and not fnmatch.fnmatchcase(event.api, self.api):
            return False
        if fnmatch.fnmatchcase(event.site.symbol, self.site):
            return True
        return self.overrides and any(
            fnmatch.fnmatchcase(symbol, self.site) for symbol in event.site.overrides
        )

    def matches_symbol(self, symbol: str, kind: str | None = None) -> bool:
        """For the static scan, which knows a site's symbol and kind but no API call."""
        if self.kind is not None and kind is not None and kind != self.kind:
            return False
        return fnmatch.fnmatchcase(symbol, self.site)


@dataclass(frozen=True)
class Budget:
    """Limits for one runner and speculation mode of one profile."""

    profile: str
    runner: str
    speculation: bool
    limits: dict[str, dict[str, int]]
    allow: tuple[AllowRule, ...] = ()
    note: str = ""
    source: str = ""

    def limit(self, step_kind: StepKind, sync_kind: str) -> int:
        table = self.limits.get(step_kind.value, {})
        if sync_kind in table:
            return table[sync_kind]
        return self.limits.get("default", {}).get(sync_kind, 0)

    @property
    def label(self) -> str:
        spec = "spec-on" if self.speculation else "spec-off"
        return f"{self.profile}/{self.runner}/{spec}"


@dataclass(frozen=True)
class BudgetSet:
    """All budgets of one profile file."""

    profile: str
    budgets: tuple[Budget, ...]
    source: str = ""
    exclude: tuple[Exclusion, ...] = ()  # files the scan's gate need not read, each with a reason
    dispatch: tuple[str, ...] = ()  # an op class's methods this device runs, first defined wins

    def select(self, runner: str, speculation: bool) -> Budget:
        for candidate in (runner, "*"):
            for budget in self.budgets:
                if budget.runner == candidate and budget.speculation == speculation:
                    return budget
        spec = "on" if speculation else "off"
        raise BudgetError(self.source, "budget", f"no budget for runner={runner} speculation={spec}")

    def all_allow_rules(self, speculation: bool | None = None) -> tuple[AllowRule, ...]:
        """Allow rules of every budget; with ``speculation``, only of the budgets of that mode."""
        return tuple(
            rule for b in self.budgets if speculation in (None, b.speculation) for rule in b.allow
        )


def builtin_budget_path(profile: str) -> Path:
    """The budget file shipped for a device profile (``cpu``, ``cuda``, ``npu``)."""
    path = Path(str(resources.files("vllm_syncgate") / "budgets" / f"{profile}.toml"))
    if not path.is_file():
        raise BudgetError(path, "profile", f"no built-in budget for profile {profile!r}")
    return path


def load_budgets(path: str | Path) -> BudgetSet:
    """Parse and validate a budget file; any problem is a :class:`BudgetError` naming the key."""
    path = Path(path)
    return parse_budgets(read_toml(path, BudgetError), source=str(path))


def parse_budgets(data: dict[str, Any], source: str = "<budgets>",
                  _chain: tuple[str, ...] = ()) -> BudgetSet:
    reject_unknown_keys(
        data, ("profile", "budget", "extends", "exclude", "dispatch"), where="", source=source,
        error=BudgetError,
        problem="unknown key (expected profile, budget, extends, exclude, dispatch)",
    )
    base = _base(data["extends"], source, _chain) if "extends" in data else None
    profile = data.get("profile", base.profile if base is not None else None)
    if not isinstance(profile, str) or not profile:
        raise BudgetError(source, "profile", "must be a non-empty string")
    entries = data.get("budget", [] if base is not None else None)
    if not isinstance(entries, list) or (not entries and base is None):
        raise BudgetError(source, "budget", "must be a non-empty array of tables ([[budget]])")
    budgets = tuple(_parse_budget(profile, e, f"budget[{i}]", source) for i, e in enumerate(entries))
    seen: set[tuple[str, bool]] = set()
    for i, b in enumerate(budgets):
        if (b.runner, b.speculation) in seen:
            raise BudgetError(source, f"budget[{i}]", f"duplicate budget for {b.label}")
        seen.add((b.runner, b.speculation))
    exclude = parse_exclusions(data.get("exclude", []), source, "exclude", BudgetError)
    dispatch = data.get("dispatch", list(base.dispatch) if base is not None else [])
    if not isinstance(dispatch, list) or not all(isinstance(m, str) and m for m in dispatch):
        raise BudgetError(source, "dispatch", "must be a list of method names (forward_oot, ...)")
    if base is not None:
        budgets = _extend(base.budgets, budgets)
        exclude = base.exclude + exclude
    return BudgetSet(profile=profile, budgets=budgets, source=source, exclude=exclude,
                     dispatch=tuple(dispatch))


def _base(name: Any, source: str, chain: tuple[str, ...]) -> BudgetSet:
    """The budget file ``extends`` names: a built-in profile's, or a .toml path beside ``source``."""
    if not isinstance(name, str) or not name:
        raise BudgetError(source, "extends", "must be a built-in budget name (cpu, cuda, npu) or a .toml path")
    if name.endswith(".toml"):
        path = Path(source).parent / name
    else:
        try:
            path = builtin_budget_path(name)
        except BudgetError:
            raise BudgetError(source, "extends", f"no built-in budget {name!r} (or name a .toml file)") from None
    key = str(path.resolve())
    if key in chain or key == str(Path(source).resolve()):
        raise BudgetError(source, "extends", f"{name}: extends itself (a cycle)")
    return parse_budgets(read_toml(path, BudgetError), str(path), (*chain, str(Path(source).resolve())))


def _extend(base: tuple[Budget, ...], own: tuple[Budget, ...]) -> tuple[Budget, ...]:
    """Each own budget merged into the base budgets of its runner (``*``: all) and mode."""
    merged = list(base)
    for extra in own:
        matched = False
        for i, budget in enumerate(merged):
            if budget.speculation == extra.speculation and extra.runner in ("*", budget.runner):
                limits = {table: {**budget.limits.get(table, {}), **extra.limits.get(table, {})}
                          for table in {*budget.limits, *extra.limits}}
                merged[i] = Budget(budget.profile, budget.runner, budget.speculation, limits,
                                   budget.allow + extra.allow, extra.note or budget.note,
                                   extra.source)
                matched = True
        if not matched:
            merged.append(extra)
    return tuple(merged)


def _parse_budget(profile: str, entry: Any, where: str, source: str) -> Budget:
    if not isinstance(entry, dict):
        raise BudgetError(source, where, "must be a table")
    reject_unknown_keys(entry, _BUDGET_KEYS, where=where, source=source, error=BudgetError)
    runner = entry.get("runner", "*")
    if runner not in RUNNERS:
        raise BudgetError(source, f"{where}.runner", f"must be one of {', '.join(RUNNERS)}")
    speculation = entry.get("speculation", False)
    if not isinstance(speculation, bool):
        raise BudgetError(source, f"{where}.speculation", "must be true or false")
    limits = _parse_limits(entry.get("limits", {}), f"{where}.limits", source)
    allow = tuple(
        _parse_allow(rule, f"{where}.allow[{i}]", source)
        for i, rule in enumerate(_as_list(entry.get("allow", []), f"{where}.allow", source))
    )
    note = entry.get("note", "")
    if not isinstance(note, str):
        raise BudgetError(source, f"{where}.note", "must be a string")
    return Budget(profile, runner, speculation, limits, allow, note, source)


def _parse_limits(raw: Any, where: str, source: str) -> dict[str, dict[str, int]]:
    if not isinstance(raw, dict):
        raise BudgetError(source, where, "must be a table")
    limits: dict[str, dict[str, int]] = {}
    for table_name, table in raw.items():
        if table_name not in _LIMIT_TABLES:
            raise BudgetError(
                source, f"{where}.{table_name}", f"unknown step kind (expected {', '.join(_LIMIT_TABLES)})"
            )
        if not isinstance(table, dict):
            raise BudgetError(source, f"{where}.{table_name}", "must be a table")
        limits[table_name] = {}
        for kind, count in table.items():
            key = f"{where}.{table_name}.{kind}"
            if kind not in SYNC_KINDS:
                raise BudgetError(source, key, f"unknown sync kind (expected {', '.join(SYNC_KINDS)})")
            if isinstance(count, bool) or not isinstance(count, int):
                raise BudgetError(source, key, f"must be an integer count, got {count!r}")
            if count < 0:
                raise BudgetError(source, key, f"must not be negative, got {count}")
            limits[table_name][kind] = count
    return limits


def _parse_allow(rule: Any, where: str, source: str) -> AllowRule:
    if not isinstance(rule, dict):
        raise BudgetError(source, where, "must be a table with site and reason")
    reject_unknown_keys(rule, _ALLOW_KEYS, where=where, source=source, error=BudgetError)
    site = rule.get("site")
    if not isinstance(site, str) or ":" not in site:
        raise BudgetError(source, f"{where}.site", "must be 'module:qualname' (globs allowed)")
    reason = rule.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise BudgetError(source, f"{where}.reason", "must say why the sync is by design")
    kind = rule.get("kind")
    if kind is not None and kind not in SYNC_KINDS:
        raise BudgetError(source, f"{where}.kind", f"unknown sync kind {kind!r}")
    api = rule.get("api")
    if api is not None and not isinstance(api, str):
        raise BudgetError(source, f"{where}.api", "must be a string")
    cap = rule.get("max_per_step")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise BudgetError(source, f"{where}.max_per_step", f"must be a positive integer, got {cap!r}")
    flags = {}
    for key in ("overrides", "logprobs_only"):
        flags[key] = rule.get(key, False)
        if not isinstance(flags[key], bool):
            raise BudgetError(source, f"{where}.{key}", f"must be true or false, got {flags[key]!r}")
    if flags["overrides"] and (kind is None or cap is None):
        raise BudgetError(source, f"{where}.overrides", "needs kind and max_per_step: an override "
                          "may wait only the way the method it overrides does, as often")
    return AllowRule(site=site, reason=reason, kind=kind, api=api, max_per_step=cap, **flags,
                     source=source)


def _as_list(value: Any, where: str, source: str) -> Iterable[Any]:
    if not isinstance(value, list):
        raise BudgetError(source, where, "must be an array of tables ([[...allow]])")
    return value

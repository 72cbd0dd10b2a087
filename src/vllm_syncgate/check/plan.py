"""What a ``syncgate check`` run will do, settled before anything starts.

Every input problem (unknown scenario, bad profile, missing model dir, unwritable report dir) is
found here, so a bad invocation fails in a second with nothing started and nothing written.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from vllm_syncgate.audit.budgets import BudgetSet, load_budgets
from vllm_syncgate.check.rehearsal import Rehearsal, rehearse_profile, require_device
from vllm_syncgate.errors import ProfileError, ReportDirError, UsageError
from vllm_syncgate.models import inspect_model_dir
from vllm_syncgate.profiles import Group, Profile, builtin_profile_path, load_profile, quick_group
from vllm_syncgate.serve.scenarios import SCENARIOS


@dataclass(frozen=True)
class Plan:
    profile: Profile
    groups: tuple[Group, ...]  # only the selected scenarios, empty groups dropped
    model_dir: Path | None  # None: the profile's embedded recipe, built or reused from the cache
    recipe: str | None
    budgets: BudgetSet
    report_dir: Path
    rehearsal: Rehearsal | None = None  # a device profile rehearsed on the CPU stack
    mutant: str | None = None  # a test-suite mutant armed in the servers (--mutant, hidden)

    @property
    def stack(self) -> str:
        """The device the servers really run on."""
        return self.rehearsal.stack if self.rehearsal is not None else self.profile.device


def make_plan(device: str | None, profile_path: str | None, model: str | None,
              scenarios: list[str] | None, report_dir: str, rehearse: bool = False,
              need_device: bool = True, quick: bool = False) -> Plan:
    """Settle the run; a device profile without its device is refused here unless rehearsed
    or ``need_device`` is false (levels that run without it, e.g. ``--levels scan,unit``).
    ``quick``: only the profile's ``quick`` scenarios, on the one group that has them all."""
    profile = load_profile(profile_path or builtin_profile_path(device or "cpu"))
    if device is not None and profile_path is not None and profile.device != device:
        raise UsageError(f"--device {device} contradicts {profile.source} (device = {profile.device})")
    for i, group in enumerate(profile.groups):
        for name in group.scenarios:
            if name not in SCENARIOS:
                raise ProfileError(profile.source, f"group[{i}].scenarios",
                                   f"unknown scenario {name!r}")
    if profile.quick and quick_group(profile.groups, profile.quick) is None:
        raise ProfileError(profile.source, "quick", "must name scenarios of one group (one "
                           f"server), got {list(profile.quick)!r}")
    rehearsal = None
    if rehearse:
        profile, rehearsal = rehearse_profile(profile)
    elif need_device:
        require_device(profile.device)
    groups = _quick(profile, scenarios) if quick else _select(profile, scenarios)
    model_dir, recipe = _model(profile, model)
    return Plan(profile, groups, model_dir, recipe, load_budgets(profile.budget_file),
                prepare_report_dir(Path(report_dir)), rehearsal)


def _select(profile: Profile, wanted: list[str] | None) -> tuple[Group, ...]:
    if not wanted:
        return profile.groups
    known = {name for g in profile.groups for name in g.scenarios}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise UsageError(
            f"--scenarios: unknown scenario {unknown[0]!r} for profile {profile.device} "
            f"(known: {', '.join(sorted(known))})"
        )
    groups = []
    for group in profile.groups:
        picked = tuple(s for s in group.scenarios if s in wanted)
        if picked:
            groups.append(Group(group.name, group.flags, picked, group.speculation, group.env,
                                group.note))
    return tuple(groups)


def _quick(profile: Profile, scenarios: list[str] | None) -> tuple[Group, ...]:
    if scenarios:
        raise UsageError("--quick runs the profile's quick scenarios; drop --scenarios")
    group = quick_group(profile.groups, profile.quick) if profile.quick else None
    if group is None:
        raise UsageError(f"--quick: profile {profile.source} defines no quick scenarios")
    return (replace(group, scenarios=tuple(s for s in group.scenarios if s in profile.quick)),)


def left_out_by_quick(profile: Profile) -> list[str]:
    """What ``--quick`` does not run, for ``--help`` and the report: groups, then scenarios."""
    group = quick_group(profile.groups, profile.quick)
    out = [f"{g.name} group ({', '.join(g.scenarios)})" for g in profile.groups if g is not group]
    if group is not None:
        rest = [s for s in group.scenarios if s not in profile.quick]
        if rest:
            out.insert(0, f"{', '.join(rest)} on {group.name}")
    return out


def _model(profile: Profile, model: str | None) -> tuple[Path | None, str | None]:
    """``--model`` if given, else the profile's (already resolved) recipe or directory.

    A model directory is inspected here (files present, config and marker readable), so a bad
    one fails before any level runs and before the report directory exists.
    """
    model_dir = Path(model) if model is not None else profile.model_dir
    if model_dir is not None:
        inspect_model_dir(model_dir)
        return model_dir, None
    return None, profile.recipe


def prepare_report_dir(path: Path) -> Path:
    """Create the report dir and prove it is writable before any server starts."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".syncgate-probe-"):
            pass
    except OSError as exc:
        raise ReportDirError(f"{path}: report directory is not writable ({exc.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ReportDirError(f"{path}: report directory is not writable")
    return path

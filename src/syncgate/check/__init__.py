"""``syncgate check`` as a library: model, servers per flag group, parity, budgets, reports.

Order matters for a 2-core machine: the servers boot together (as many as cores and memory
allow) and run their scenarios one group at a time. The HF reference (one thread) is built and
warmed in the background from the start, while servers boot; it stops warming when the last
server has stopped, and the judge generates whatever it still lacks then.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from syncgate.check.judge import judge
from syncgate.check.plan import Plan, make_plan, prepare_report_dir
from syncgate.check.report import CheckResult, failure_lines, table, write_reports
from syncgate.check.run import (
    GroupRun,
    GroupSession,
    Say,
    next_ready,
    run_group,
    servers_at_once,
)
from syncgate.environment import header
from syncgate.models import ModelInfo, ensure_model, inspect_model_dir, load_recipe
from syncgate.parity.reference import WarmReference
from syncgate.progress import ticking
from syncgate.serve.scenarios import load_prompts, reference_requests

__all__ = [
    "CheckResult",
    "Plan",
    "env_header",
    "failure_lines",
    "make_plan",
    "prepare_report_dir",
    "resolve_model",
    "run_check",
    "table",
    "write_reports",
]


def env_header(plan: Plan) -> dict[str, Any]:
    """The header a later ``syncgate repro`` reads back: versions, device, flags, seed, image.

    Known before anything is built or started, so it is the first line of the output.
    """
    model = str(plan.model_dir)
    if plan.recipe is not None:
        model = f"{plan.recipe}:{load_recipe(plan.recipe).digest()}"
    return header(device=plan.stack, profile=plan.profile.source,
                  flags={g.name: plan.profile.group_flags(g) for g in plan.groups},
                  seed=plan.profile.seed, model=model)


def resolve_model(plan: Plan) -> tuple[ModelInfo, bool]:
    """The model dir to serve: given, or the embedded recipe's (built on first use)."""
    if plan.model_dir is not None:
        return inspect_model_dir(plan.model_dir), True
    assert plan.recipe is not None
    return ensure_model(load_recipe(plan.recipe))


def run_check(plan: Plan, model: ModelInfo, env: dict[str, Any], say: Say) -> CheckResult:
    """Run every group (:func:`servers_at_once` booting together), then judge.

    The HF reference warms up in a background thread meanwhile: server start-up is mostly
    single-threaded imports, and the reference takes what the boots leave.
    """
    at_once = servers_at_once(plan.profile.prestart, len(plan.groups))
    timings: dict[str, float] = {"servers_at_once": at_once}
    reference = WarmReference(model.path, reference_requests(*load_prompts()))
    sessions = [GroupSession(plan.profile, g, model.path, plan.report_dir) for g in plan.groups]
    groups: list[GroupRun] = []
    with contextlib.ExitStack() as stack:
        for session in sessions:
            stack.callback(session.stop)
        waiting = list(sessions)
        while waiting:
            for ahead in waiting[:at_once]:
                if not ahead.server.alive():
                    say(f"[{ahead.result.profile_group.name}] starting vllm serve "
                        f"{' '.join(ahead.result.flags)}")
                    ahead.launch()
            session = next_ready(waiting[:at_once], say)  # whichever boots first runs first
            waiting.remove(session)
            run = run_group(session, say)
            timings[f"server_start:{run.profile_group.name}"] = round(run.startup_s, 2)
            timings[f"group:{run.profile_group.name}"] = round(run.wall_s, 2)
            groups.append(run)
    groups.sort(key=lambda run: plan.groups.index(run.profile_group))  # judged in profile order
    started = time.monotonic()
    say("judging parity against the HF transformers fp32 greedy reference")
    with ticking(say, "HF reference: finishing and judging"):
        scenarios, group_verdicts = judge(groups, reference.result(), plan.budgets,
                                          mode=plan.profile.parity,
                                          tolerance=plan.profile.tolerance,
                                          default_runner=plan.profile.runner)
    timings["reference_after_servers"] = round(time.monotonic() - started, 2)
    return CheckResult(
        env=env,
        profile=plan.profile.to_json(),
        model=model.to_json(),
        scenarios=scenarios,
        groups=group_verdicts,
        timings=timings,
        rehearsal=None if plan.rehearsal is None else plan.rehearsal.to_json(plan.budgets),
    )

"""``syncgate check`` as a library: model, servers per flag group, parity, budgets, reports.

Order matters for a 2-core machine: the servers boot together (as many as cores and memory
allow) and run their scenarios one group at a time. The HF reference (one thread) is built and
warmed in the background from the start, while servers boot; it stops warming when the last
server has stopped, and the judge generates whatever it still lacks then.
"""

from __future__ import annotations

import time
from typing import Any

from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.overlay import CodeUnderTest
from vllm_syncgate.check.plan import Plan, make_plan, prepare_report_dir
from vllm_syncgate.check.report import CheckResult, failure_lines, table, write_reports
from vllm_syncgate.check.run import (
    GroupRun,
    GroupSession,
    Say,
    next_ready,
    run_group,
    servers_at_once,
)
from vllm_syncgate.environment import header
from vllm_syncgate.models import ModelInfo, ensure_model, inspect_model_dir, load_recipe
from vllm_syncgate.parity.reference import WarmReference
from vllm_syncgate.progress import ticking
from vllm_syncgate.serve.scenarios import load_prompts, reference_requests

__all__ = [
    "CheckResult",
    "Plan",
    "ServeLevel",
    "env_header",
    "failure_lines",
    "make_plan",
    "prepare_report_dir",
    "resolve_model",
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


class ServeLevel:
    """The serve level under way: from construction the HF reference warms up in a background
    thread and the first :func:`servers_at_once` servers boot, so both overlap whatever runs
    meanwhile (the scan and unit levels). :meth:`finish` runs the groups, whichever server is
    ready first, and judges; :meth:`stop` ends every server and the reference warm-up (abandoned,
    or finished)."""

    def __init__(self, plan: Plan, model: ModelInfo, env: dict[str, Any], say: Say,
                 code: CodeUnderTest | None = None) -> None:
        self.plan, self.model, self.env, self.say = plan, model, env, say
        self.at_once = servers_at_once(plan.profile.prestart, len(plan.groups))
        self.started = time.monotonic()
        self.reference = WarmReference(model.path, reference_requests(*load_prompts()))
        self.sessions = [GroupSession(plan.profile, g, model.path, plan.report_dir, code,
                                      mutant=plan.mutant) for g in plan.groups]
        try:
            self._launch(self.sessions[: self.at_once])
        except BaseException:
            self.stop()
            raise

    def _launch(self, sessions: list[GroupSession]) -> None:
        for session in sessions:
            if not session.server.alive():
                self.say(f"[{session.result.profile_group.name}] starting vllm serve "
                         f"{' '.join(session.result.flags)}")
                session.launch()

    def stop(self) -> None:
        for session in self.sessions:
            session.stop()
        self.reference.close()

    def finish(self) -> CheckResult:
        plan, say = self.plan, self.say
        timings: dict[str, float] = {"servers_at_once": self.at_once}
        groups: list[GroupRun] = []
        try:
            waiting = list(self.sessions)
            while waiting:
                self._launch(waiting[: self.at_once])
                session = next_ready(waiting[: self.at_once], say)  # first booted runs first
                waiting.remove(session)
                run = run_group(session, say)
                timings[f"server_start:{run.profile_group.name}"] = round(run.startup_s, 2)
                timings[f"group:{run.profile_group.name}"] = round(run.wall_s, 2)
                groups.append(run)
        finally:
            self.stop()
        groups.sort(key=lambda run: plan.groups.index(run.profile_group))  # profile order
        started = time.monotonic()
        say("judging parity against the HF transformers fp32 greedy reference")
        with ticking(say, "HF reference: finishing and judging"):
            scenarios, group_verdicts = judge(groups, self.reference.result(), plan.budgets,
                                              mode=plan.profile.parity,
                                              tolerance=plan.profile.tolerance,
                                              default_runner=plan.profile.runner)
        timings["reference_after_servers"] = round(time.monotonic() - started, 2)
        timings["serve_level"] = round(time.monotonic() - self.started, 2)
        return CheckResult(
            env=self.env,
            profile=plan.profile.to_json(),
            model=self.model.to_json(),
            scenarios=scenarios,
            groups=group_verdicts,
            timings=timings,
            rehearsal=None if plan.rehearsal is None else plan.rehearsal.to_json(plan.budgets),
        )

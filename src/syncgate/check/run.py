"""Driving the servers: one ``vllm serve`` per group, its scenarios, and the audit journal slices.

The live-audit plugin journals every runner step as it happens, so reading the journals between
two scenarios tells which steps (and syncs) each scenario caused.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from syncgate.audit.collect import load_audit_dir
from syncgate.audit.ledger import Step
from syncgate.errors import RequestError
from syncgate.profiles import Group, Profile
from syncgate.serve.client import OpenAIClient
from syncgate.serve.process import tree_rss
from syncgate.serve.scenarios import SCENARIOS, Context, Outcome, Scenario, load_prompts
from syncgate.serve.vllm import SERVED_MODEL_NAME, vllm_server
from syncgate.vllm_plugin import ENV_AUDIT_DIR

Say = Callable[[str], None]


@dataclass
class ScenarioRun:
    group: str
    scenario: Scenario
    outcome: Outcome
    duration_s: float
    steps: list[Step] = field(default_factory=list)
    error: str | None = None

    @property
    def key(self) -> str:
        return f"{self.group}/{self.scenario.name}"


@dataclass
class GroupRun:
    group: Group
    flags: list[str]
    log_path: Path
    audit_dir: Path
    startup_s: float = 0.0
    wall_s: float = 0.0
    peak_rss: int = 0
    scenarios: list[ScenarioRun] = field(default_factory=list)
    unattributed: list[Step] = field(default_factory=list)  # start-up and trailing steps
    runner: str | None = None
    speculation: bool | None = None


class _Journal:
    """Per-worker step counts already attributed, so each read returns only the new steps."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._seen: dict[int, int] = {}
        self.runner: str | None = None
        self.speculation: bool | None = None

    def new_steps(self) -> list[Step]:
        run = load_audit_dir(self.directory)
        self.runner, self.speculation = run.runner, run.speculation
        fresh: list[Step] = []
        for worker in run.workers:
            fresh += worker.steps[self._seen.get(worker.pid, 0):]
            self._seen[worker.pid] = len(worker.steps)
        return fresh


def run_group(profile: Profile, group: Group, model_dir: Path, report_dir: Path,
              say: Say) -> GroupRun:
    """Start the group's server, run its scenarios in order, stop it (always)."""
    slug = group.name
    audit_dir = report_dir / "audit" / slug
    audit_dir.mkdir(parents=True, exist_ok=True)
    for stale in audit_dir.glob("*.jsonl"):
        stale.unlink()
    flags = profile.group_flags(group)
    result = GroupRun(group, flags, report_dir / "logs" / f"{slug}.log", audit_dir)
    env = {**os.environ, **profile.group_env(group), ENV_AUDIT_DIR: str(audit_dir.resolve())}
    server = vllm_server(model_dir, flags, env=env, log_path=result.log_path, name=slug,
                         startup_timeout_s=profile.startup_timeout_s)
    started = time.monotonic()
    say(f"[{slug}] starting vllm serve {' '.join(flags)}")
    with server:
        last = [0.0]

        def waiting(elapsed: float) -> None:
            if elapsed - last[0] >= 10:
                last[0] = elapsed
                say(f"[{slug}] waiting for /health ({elapsed:.0f} s)")

        result.startup_s = server.start(waiting)
        say(f"[{slug}] healthy after {result.startup_s:.1f} s on port {server.port}")
        journal = _Journal(audit_dir)
        result.unattributed += journal.new_steps()
        short, long = load_prompts()
        client = OpenAIClient(server.base_url, SERVED_MODEL_NAME, profile.request_timeout_s,
                              top_logprobs=5 if profile.parity == "logprob" else 0)
        context = Context(client, short, long)
        for name in group.scenarios:
            run = _run_scenario(slug, SCENARIOS[name], context)
            result.peak_rss = max(result.peak_rss, tree_rss(server.pid))
            if run.error is not None and not server.alive():
                server.check_alive()  # the server died: stop here with its log's last word
            run.steps = journal.new_steps()
            result.scenarios.append(run)
            state = "error" if run.error else f"{len(run.outcome.generations)} generations"
            say(f"[{slug}] {name}: {state}, {len(run.steps)} steps, {run.duration_s:.1f} s")
        result.unattributed += journal.new_steps()
        result.runner, result.speculation = journal.runner, journal.speculation
    result.wall_s = time.monotonic() - started
    return result


def _run_scenario(group: str, scenario: Scenario, context: Context) -> ScenarioRun:
    started = time.monotonic()
    try:
        outcome = scenario.run(context)
        error = None
    except RequestError as exc:
        outcome, error = Outcome(), str(exc)
    return ScenarioRun(group, scenario, outcome, time.monotonic() - started, error=error)


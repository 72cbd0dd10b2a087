"""Driving the servers: one ``vllm serve`` per group, its scenarios, and the audit journal slices.

The live-audit plugin journals every runner step as it happens, so reading the journals between
two scenarios tells which steps (and syncs) each scenario caused. A :class:`GroupSession` is
shared by ``syncgate check`` (all scenarios in a row) and the e2e tests (one test per scenario).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from vllm_syncgate.audit.journal import ENV_AUDIT_DIR, ENV_MUTANT, JournalCursor, clear_journals
from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.check.overlay import CodeUnderTest
from vllm_syncgate.errors import RequestError
from vllm_syncgate.profiles import AUTO, Group, Profile
from vllm_syncgate.progress import Say
from vllm_syncgate.serve.client import OpenAIClient
from vllm_syncgate.serve.process import ManagedServer, tree_rss
from vllm_syncgate.serve.scenarios import SCENARIOS, Context, Outcome, Scenario, load_prompts
from vllm_syncgate.serve.shim import ENV_VLLM_DIR
from vllm_syncgate.serve.vllm import SERVED_MODEL_NAME, boot_phase, vllm_server

SERVER_TREE_BYTES = 3 << 30  # peak RSS of one CPU server tree (API, EngineCore, worker): 2.8 GiB
TICK_S = 10.0  # a booting server says its phase when it changes, else this often


def servers_at_once(prestart: int | str, groups: int, cores: int | None = None,
                    available: int | None = None) -> int:
    """How many servers boot at the same time.

    A number: the group in use plus ``prestart`` ahead. ``auto``: a boot is a chain of
    single-threaded imports (one core each) and a running group mostly waits on HTTP, so one
    server more than there are cores keeps every core busy; memory caps it (a tree per server).
    """
    if prestart != AUTO:
        return max(1, min(groups, 1 + int(prestart)))
    cores = cores if cores is not None else len(os.sched_getaffinity(0))
    if available is None:
        available = int(psutil.virtual_memory().available)
    return max(1, min(groups, cores + 1, available // SERVER_TREE_BYTES))


@dataclass
class ScenarioRun:
    group_name: str
    scenario: Scenario
    outcome: Outcome
    duration_s: float
    steps: list[Step] = field(default_factory=list)
    error: str | None = None

    @property
    def key(self) -> str:
        return f"{self.group_name}/{self.scenario.name}"


@dataclass
class GroupRun:
    profile_group: Group
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


class GroupSession:
    """One group's server with the audit armed; scenarios run one after another against it."""

    def __init__(self, profile: Profile, group: Group, model_dir: Path, work_dir: Path,
                 code: CodeUnderTest | None = None, mutant: str | None = None) -> None:
        audit_dir = work_dir / "audit" / group.name
        audit_dir.mkdir(parents=True, exist_ok=True)
        clear_journals(audit_dir)
        flags = profile.group_flags(group)
        self.result = GroupRun(group, flags, work_dir / "logs" / f"{group.name}.log", audit_dir)
        inherited = {k: v for k, v in os.environ.items() if k != ENV_MUTANT}  # never a leftover
        env = {**inherited, **profile.group_env(group), ENV_AUDIT_DIR: str(audit_dir.resolve()),
               **({ENV_MUTANT: mutant} if mutant else {})}
        if code is not None and code.import_root is not None:  # serve exactly this vllm
            env = {**code.child_env(env), ENV_VLLM_DIR: str(code.import_root)}
        self.server: ManagedServer = vllm_server(
            model_dir, flags, env=env, log_path=self.result.log_path, name=group.name,
            startup_timeout_s=profile.startup_timeout_s,
        )
        self._journal = JournalCursor(audit_dir)
        self._started = 0.0
        self._stopped = False
        short, long = load_prompts()
        self._prompts = short, long
        self._timeout = profile.request_timeout_s
        self._said = ("", 0.0)  # the boot phase said last, and when
        self.context: Context | None = None

    def launch(self) -> None:
        self._started = time.monotonic()
        self.server.launch()

    def wait(self, say: Say) -> None:
        while not self.poll(say):
            time.sleep(0.5)

    def poll(self, say: Say) -> bool:
        """One look at the booting server (its phase said as it changes); True once it is ready."""
        if self.context is not None:
            return True
        name = self.result.profile_group.name

        def booting(elapsed: float) -> None:
            phase = boot_phase(self.server.launch_log())
            if phase != self._said[0] or elapsed - self._said[1] >= TICK_S:
                self._said = (phase, elapsed)
                say(f"[{name}] booting: {phase} ({elapsed:.0f} s)")

        if not self.server.ready(booting):
            return False
        assert self.server.startup_s is not None
        self.result.startup_s = self.server.startup_s
        say(f"[{name}] healthy after {self.result.startup_s:.1f} s on port {self.server.port}")
        self.result.unattributed += self._new_steps()
        # no logprobs: a logprobs request adds readbacks to every step serving it; only the
        # logprob_parity scenario asks for them, in requests of its own
        client = OpenAIClient(self.server.base_url, SERVED_MODEL_NAME, self._timeout)
        self.context = Context(client, *self._prompts)
        return True

    def run(self, scenario: Scenario) -> ScenarioRun:
        assert self.context is not None, "wait() first"
        started = time.monotonic()
        try:
            outcome, error = scenario.run(self.context), None
        except RequestError as exc:
            outcome, error = Outcome(), str(exc)
        run = ScenarioRun(self.result.profile_group.name, scenario, outcome, time.monotonic() - started,
                          error=error)
        self.result.peak_rss = max(self.result.peak_rss, tree_rss(self.server.pid))
        if error is not None:
            self.server.check_alive()  # a dead server ends the run with its log's last word
        run.steps = self._new_steps()
        self.result.scenarios.append(run)
        return run

    def _new_steps(self) -> list[Step]:
        """Steps journaled since the last read; the workers' headers must name runner and mode."""
        steps = self._journal.new_steps()
        self.result.runner = self._journal.runner
        self.result.speculation = self._journal.speculation
        return steps

    def stop(self) -> GroupRun:
        if self._stopped:
            return self.result
        self._stopped = True
        if self.server.alive() and self.context is not None:  # a boot cut short has no steps
            self.result.unattributed += self._new_steps()
        self.server.stop()
        if self._started:
            self.result.wall_s = time.monotonic() - self._started
        return self.result


def next_ready(sessions: list[GroupSession], say: Say) -> GroupSession:
    """The first of these launched sessions whose server is ready, watching them all in turn."""
    while True:
        for session in sessions:
            if session.poll(say):
                return session
        time.sleep(0.5)


def run_group(session: GroupSession, say: Say) -> GroupRun:
    """Wait for an already launched session's server, run its scenarios, stop it (always)."""
    name = session.result.profile_group.name
    try:
        session.wait(say)
        for scenario_name in session.result.profile_group.scenarios:
            run = session.run(SCENARIOS[scenario_name])
            state = "request failed" if run.error else f"{len(run.outcome.generations)} generations"
            say(f"[{name}] {scenario_name}: {state}, {len(run.steps)} steps, "
                f"{run.duration_s:.1f} s")
    finally:
        session.stop()
    return session.result

"""Turning what the servers did into verdicts: parity (vs HF and vs the other scenarios) and budgets.

Each scenario passes only if every generation matches the HF reference, matches the first other
scenario that ran the same prompt (so runner variants are compared with each other, not only with
HF), raised no problem of its own, and stayed inside the per-step sync budget of its runner and
speculation mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from syncgate.audit.budgets import Budget, BudgetSet
from syncgate.audit.verdict import Verdict, evaluate
from syncgate.check.run import GroupRun, ScenarioRun
from syncgate.parity import Divergence, Tolerance, compare_exact, compare_logprob
from syncgate.serve.scenarios import Generation


class Reference(Protocol):
    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int) -> Any: ...
    def decode(self, token_ids: Sequence[int]) -> str: ...


@dataclass
class ParityIssue:
    label: str
    against: str  # "hf" or the other scenario's key
    divergence: Divergence

    def describe(self) -> str:
        return f"{self.label} vs {self.against}: {self.divergence.describe()}"

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "against": self.against,
                "divergence": self.divergence.to_json()}


@dataclass
class ScenarioVerdict:
    run: ScenarioRun
    budget: Budget
    hf: list[ParityIssue] = field(default_factory=list)
    peers: list[ParityIssue] = field(default_factory=list)
    tolerated: list[ParityIssue] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    sync: Verdict | None = None

    @property
    def passed(self) -> bool:
        return not (self.hf or self.peers or self.problems) and (self.sync is None or
                                                                   self.sync.passed)

    def failures(self) -> list[str]:
        lines = list(self.problems)
        lines += [issue.describe() for issue in self.hf + self.peers]
        if self.sync is not None:
            lines += [f"budget {self.budget.label}: {b.describe()}" for b in self.sync.breaches]
        return lines


@dataclass
class GroupVerdict:
    """Steps between scenarios (start-up, trailing empties) are judged too, per group."""

    run: GroupRun
    budget: Budget
    between: Verdict
    problems: list[str] = field(default_factory=list)
    scenarios: list[ScenarioVerdict] = field(default_factory=list)  # the group's, in run order

    @property
    def passed(self) -> bool:
        return self.between.passed and not self.problems


def judge(groups: Sequence[GroupRun], reference: Reference, budgets: BudgetSet, *,
          mode: str, tolerance: Tolerance, default_runner: str,
          ) -> tuple[list[ScenarioVerdict], list[GroupVerdict]]:
    scenario_verdicts: list[ScenarioVerdict] = []
    group_verdicts: list[GroupVerdict] = []
    anchors: dict[tuple[int, ...], tuple[str, Generation]] = {}
    for group in groups:
        speculation = group.profile_group.speculation if group.speculation is None else group.speculation
        budget = budgets.select(group.runner or default_runner, speculation)
        problems = []
        if group.speculation is not None and group.speculation != group.profile_group.speculation:
            problems.append(f"profile says speculation={group.profile_group.speculation}, "
                            f"the worker ran with speculation={group.speculation}")
        group_verdict = GroupVerdict(group, budget, evaluate(group.unattributed, budget), problems)
        group_verdicts.append(group_verdict)
        for run in group.scenarios:
            verdict = ScenarioVerdict(run, budget)
            verdict.problems += run.outcome.problems
            if run.error:
                verdict.problems.append(f"request failed: {run.error}")
            if run.steps:
                verdict.sync = evaluate(run.steps, budget)
            elif run.outcome.generations:  # tokens came out, yet no step was journaled
                verdict.problems.append("the audit journal recorded no runner step: the sync "
                                        "budget cannot be judged (is the plugin armed?)")
            for gen in run.outcome.generations:
                _check_generation(verdict, gen, run.key, reference, anchors, mode, tolerance)
            scenario_verdicts.append(verdict)
            group_verdict.scenarios.append(verdict)
    return scenario_verdicts, group_verdicts


def _check_generation(verdict: ScenarioVerdict, gen: Generation, key: str, reference: Reference,
                      anchors: dict[tuple[int, ...], tuple[str, Generation]], mode: str,
                      tolerance: Tolerance) -> None:
    if not gen.prompt_token_ids:
        verdict.problems.append(f"{gen.label}: the server returned no prompt_token_ids")
        return
    prompt = tuple(gen.prompt_token_ids)
    needed = len(gen.token_ids) if gen.prefix_ok else gen.max_tokens
    ref = reference.generate(prompt, needed)
    _record(verdict, gen.label, "hf",
            _compare(ref.token_ids, gen.token_ids, ref.top_logprobs, gen.top_logprobs, mode,
                     tolerance, reference, truncated=gen.prefix_ok))
    anchor = anchors.setdefault(prompt, (key, gen))
    if anchor[0] == key:
        return
    other = anchor[1]
    common = min(len(other.token_ids), len(gen.token_ids))
    _record(verdict, gen.label, f"{anchor[0]}:{other.label}",
            _compare(other.token_ids[:common], gen.token_ids[:common], other.top_logprobs or [],
                     gen.top_logprobs, mode, tolerance, reference, truncated=False),
            peer=True)


def _compare(expected: Sequence[int], actual: Sequence[int],
             expected_top: Sequence[dict[int, float]], actual_top: Sequence[dict[int, float]] | None,
             mode: str, tolerance: Tolerance, reference: Reference,
             truncated: bool) -> Divergence | None:
    if mode == "exact":
        return compare_exact(expected, actual, allow_truncated=truncated, decode=reference.decode)
    return compare_logprob(expected, actual, expected_top=expected_top,
                           actual_top=actual_top or [], tolerance=tolerance,
                           allow_truncated=truncated, decode=reference.decode)


def _record(verdict: ScenarioVerdict, label: str, against: str, div: Divergence | None,
            peer: bool = False) -> None:
    if div is None:
        return
    issue = ParityIssue(label, against, div)
    if div.tolerated:
        verdict.tolerated.append(issue)
    elif peer:
        verdict.peers.append(issue)
    else:
        verdict.hf.append(issue)

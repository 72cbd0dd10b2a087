"""Turning what the servers did into verdicts: parity (vs HF and vs the other scenarios) and budgets.

Each scenario passes only if every generation matches the HF reference, matches the first other
scenario that ran the same prompt (so runner variants are compared with each other, not only with
HF), raised no problem of its own, and stayed inside the per-step sync budget of its runner and
speculation mode.

In the logprob parity mode only the logprob_parity scenario's requests carry logprobs (a logprobs
request adds readbacks to the steps serving it, so the budget-judged scenarios send none). Its
generations are compared with :func:`compare_logprob`; a generation without logprobs may part
from HF or a peer only where a logprob request of the same prompt showed the same near tie (same
index, same two tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from vllm_syncgate.audit.budgets import Budget, BudgetSet
from vllm_syncgate.audit.verdict import Verdict, evaluate
from vllm_syncgate.check.run import GroupRun, ScenarioRun
from vllm_syncgate.parity import (
    Divergence,
    Tolerance,
    compare_exact,
    compare_logprob,
    explained_by,
)
from vllm_syncgate.serve.scenarios import Generation


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
    parity = _Parity(mode, tolerance, _near_ties(groups, reference, tolerance)
                     if mode == "logprob" else {})
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
                _check_generation(verdict, gen, run.key, reference, anchors, parity)
            scenario_verdicts.append(verdict)
            group_verdict.scenarios.append(verdict)
    return scenario_verdicts, group_verdicts


@dataclass(frozen=True)
class _Parity:
    mode: str
    tolerance: Tolerance
    ties: dict[tuple[int, ...], list[Divergence]]  # per prompt: near ties logprob requests showed


def _near_ties(groups: Sequence[GroupRun], reference: Reference, tolerance: Tolerance,
               ) -> dict[tuple[int, ...], list[Divergence]]:
    """The tolerated first divergences from HF of every generation that carries logprobs."""
    ties: dict[tuple[int, ...], list[Divergence]] = {}
    for group in groups:
        for run in group.scenarios:
            for gen in run.outcome.generations:
                if not (gen.top_logprobs and gen.prompt_token_ids):
                    continue
                ref = reference.generate(tuple(gen.prompt_token_ids), gen.max_tokens)
                div = compare_logprob(ref.token_ids, gen.token_ids, expected_top=ref.top_logprobs,
                                      actual_top=gen.top_logprobs, tolerance=tolerance)
                if div is not None and div.tolerated:
                    ties.setdefault(tuple(gen.prompt_token_ids), []).append(div)
    return ties


def _check_generation(verdict: ScenarioVerdict, gen: Generation, key: str, reference: Reference,
                      anchors: dict[tuple[int, ...], tuple[str, Generation]],
                      parity: _Parity) -> None:
    if not gen.prompt_token_ids:
        verdict.problems.append(f"{gen.label}: the server returned no prompt_token_ids")
        return
    prompt = tuple(gen.prompt_token_ids)
    needed = len(gen.token_ids) if gen.prefix_ok else gen.max_tokens
    ref = reference.generate(prompt, needed)
    _record(verdict, gen.label, "hf",
            _compare(ref.token_ids, gen.token_ids, ref.top_logprobs, gen.top_logprobs, parity,
                     parity.ties.get(prompt, ()), reference, truncated=gen.prefix_ok))
    anchor = anchors.setdefault(prompt, (key, gen))
    if anchor[0] == key:
        return
    other = anchor[1]
    common = min(len(other.token_ids), len(gen.token_ids))
    _record(verdict, gen.label, f"{anchor[0]}:{other.label}",
            _compare(other.token_ids[:common], gen.token_ids[:common], other.top_logprobs,
                     gen.top_logprobs, parity, parity.ties.get(prompt, ()), reference,
                     truncated=False),
            peer=True)


def _compare(expected: Sequence[int], actual: Sequence[int],
             expected_top: Sequence[dict[int, float]] | None,
             actual_top: Sequence[dict[int, float]] | None, parity: _Parity,
             ties: Sequence[Divergence], reference: Reference, truncated: bool,
             ) -> Divergence | None:
    if parity.mode == "logprob" and expected_top and actual_top:
        return compare_logprob(expected, actual, expected_top=expected_top, actual_top=actual_top,
                               tolerance=parity.tolerance, allow_truncated=truncated,
                               decode=reference.decode)
    div = compare_exact(expected, actual, allow_truncated=truncated, decode=reference.decode)
    if div is not None and parity.mode == "logprob":
        tie = explained_by(div, ties)
        if tie is None:
            div.note = "no logprob request of this prompt showed a near tie here"
        else:
            div.tolerated = True
            div.note = f"the logprob request of this prompt showed this near tie: {tie.note}"
    return div


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

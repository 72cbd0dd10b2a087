"""The seq-lens sync property as a shipped check: fixed, seeded scheduler sequences, no test framework.

``syncgate check``'s unit level and the pytest plugin run this on a vllm-ascend tree; syncgate's
own tests additionally drive the same methods with hypothesis. The sequences are deterministic
(one hand-written sequence that exercises every case a broken runner could get wrong, plus
sequences drawn from a seeded generator), so a verdict is reproducible on any machine.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from vllm_syncgate.npu.driver import Violation, check_seq_lens_sync, run_scenario
from vllm_syncgate.npu.scheduler import Action, AddRequest, Finish, Preempt, Schedule
from vllm_syncgate.npu.state import RunnerSpec

MAX_REQS = 4
SPEC_STEPS = 3

# Chunked prefill, drafts with rejections, a preemption and resume into another slot, a finish,
# a shuffled batch order.
REVEALING: tuple[Action, ...] = (
    AddRequest(6), AddRequest(3), Schedule(chunks=(4,)), AddRequest(9),
    Schedule((4,), (3,), (2,), 7), Schedule((5,), (2,), (1,), 3), Preempt(0),
    Schedule((8,), (3,), (3,), 11), Finish(1), Schedule((3,), (1, 3), (0, 2), 5), Schedule(),
)


def seeded_sequence(seed: int, rounds: int = 8) -> list[Action]:
    """Two arrivals, then ``rounds`` of up to two events (arrival, preemption, finish) and a step."""
    rng = random.Random(seed)
    actions: list[Action] = [AddRequest(5), AddRequest(2)]
    for _ in range(rounds):
        for _ in range(rng.randint(0, 2)):
            kind = rng.choice((AddRequest, Preempt, Finish))
            actions.append(AddRequest(rng.randint(1, 16)) if kind is AddRequest
                           else kind(rng.randint(0, 2 * MAX_REQS)))
        picks = rng.randint(1, 3)
        actions.append(Schedule(
            chunks=tuple(rng.randint(1, 12) for _ in range(picks)),
            drafts=tuple(rng.randint(1, SPEC_STEPS) for _ in range(picks)),
            rejects=tuple(rng.randint(0, SPEC_STEPS) for _ in range(picks)),
            order_seed=rng.randint(0, 1000),
        ))
    return actions


@dataclass
class PropertyCase:
    """One sequence in one speculation mode, and the property's violations in it."""

    name: str
    speculation: bool
    steps: int
    violations: list[Violation] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.violations

    def describe(self) -> str:
        if self.passed:
            return f"{self.name}: {self.steps} steps, property holds"
        rules = "".join(sorted({v.rule for v in self.violations}))
        return f"{self.name}: ({rules}) {self.violations[0]}" + (
            f" (+{len(self.violations) - 1} more)" if len(self.violations) > 1 else "")


def check_property(runner_cls: type, seeds: Iterable[int] = range(8)) -> list[PropertyCase]:
    """The seq-lens sync property on ``runner_cls`` (a loaded harness class), with and without
    speculation, on the revealing sequence and one seeded sequence per seed."""
    sequences = [("revealing", list(REVEALING))]
    sequences += [(f"random-{seed}", seeded_sequence(seed)) for seed in seeds]
    cases = []
    for spec_steps in (0, SPEC_STEPS):
        mode = "spec" if spec_steps else "no-spec"
        for name, actions in sequences:
            result = run_scenario(runner_cls, RunnerSpec(MAX_REQS, spec_steps), actions)
            violations = check_seq_lens_sync(result.records)
            if result.device_counts != result.truth:  # the simulation disagrees with its model
                violations.append(Violation("b", -1, f"device counts {result.device_counts}"
                                                     f" != scheduler truth {result.truth}"))
            cases.append(PropertyCase(f"{mode}/{name}", bool(spec_steps), len(result.records),
                                      violations))
    return cases

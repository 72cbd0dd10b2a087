"""The seq-lens sync property (vllm-ascend #13382) on runner methods driven by scheduler sequences.

(a) without speculation, no event synchronize and no device-to-host copy in any step;
(b) ``seq_lens_cpu`` equals device-true ``num_computed_tokens`` + scheduled tokens, every step;
(c) with speculation, the copy and the wait happen (and (b) still holds).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_syncgate.npu.driver import check_seq_lens_sync, run_scenario
from vllm_syncgate.npu.harness import load_runner_class
from vllm_syncgate.npu.parent import SimulatedGPUModelRunner
from vllm_syncgate.npu.property import MAX_REQS, REVEALING, SPEC_STEPS
from vllm_syncgate.npu.scheduler import AddRequest, Finish, Preempt, Schedule
from vllm_syncgate.npu.state import RunnerSpec

_small = st.integers(0, 2 * MAX_REQS)
_schedule = st.builds(
    Schedule,
    chunks=st.lists(st.integers(1, 12), min_size=1, max_size=3).map(tuple),
    drafts=st.lists(st.integers(1, SPEC_STEPS), min_size=1, max_size=3).map(tuple),
    rejects=st.lists(st.integers(0, SPEC_STEPS), min_size=1, max_size=3).map(tuple),
    order_seed=st.integers(0, 1000),
)
_event = st.one_of(
    st.builds(AddRequest, st.integers(1, 16)),
    st.builds(Preempt, _small),
    st.builds(Finish, _small),
)
# Rounds of up to two events (arrival, preemption, finish) and then a step, after two arrivals.
ACTIONS = st.lists(
    st.tuples(st.lists(_event, max_size=2), _schedule), min_size=3, max_size=10
).map(lambda rounds: [
    AddRequest(5), AddRequest(2), *(a for events, step in rounds for a in (*events, step)),
])
SPECS = st.sampled_from([RunnerSpec(MAX_REQS, 0), RunnerSpec(MAX_REQS, SPEC_STEPS)])

def _rules(runner_cls: type, spec: RunnerSpec, actions) -> set[str]:
    result = run_scenario(runner_cls, spec, list(actions))
    assert result.device_counts == result.truth  # the simulation itself agrees with the model
    return {v.rule for v in check_seq_lens_sync(result.records)}


@settings(settings.get_profile("syncgate-npu"))
@given(spec=SPECS, actions=ACTIONS)
def test_after_fix_shape_holds_the_property(after_runner, spec, actions):
    result = run_scenario(after_runner, spec, actions)
    assert result.records, "every sequence runs at least one step"
    assert check_seq_lens_sync(result.records) == []
    assert result.device_counts == result.truth


@pytest.mark.needs_sdist
@settings(settings.get_profile("syncgate-npu"))
@given(actions=ACTIONS)
def test_before_version_syncs_every_step_without_speculation(before_source, actions):
    runner = load_runner_class(before_source, SimulatedGPUModelRunner)
    result = run_scenario(runner, RunnerSpec(MAX_REQS, 0), actions)
    violations = check_seq_lens_sync(result.records)
    assert {v.rule for v in violations} == {"a"}  # seq_lens are right, the waits are not needed
    steps_hit = {v.step for v in violations}
    assert steps_hit == {r.index for r in result.records}  # (a) fails in every single step


@pytest.mark.needs_sdist
def test_before_version_is_fine_with_speculation(before_source):
    runner = load_runner_class(before_source, SimulatedGPUModelRunner)
    assert _rules(runner, RunnerSpec(MAX_REQS, SPEC_STEPS), REVEALING) == set()


@pytest.mark.needs_sdist
def test_before_violation_names_the_upstream_lines(before_source):
    runner = load_runner_class(before_source, SimulatedGPUModelRunner)
    result = run_scenario(runner, RunnerSpec(MAX_REQS, 0), REVEALING)
    copy_sites = {s.symbol for r in result.records for s in r.d2h_copies}
    assert copy_sites == {
        "vllm_ascend.worker.v2.model_runner:NPUModelRunner._copy_num_computed_tokens_to_cpu"
    }
    assert all(len(r.event_sync_sites) == 1 for r in result.records)


# --- mutants of the after-fix shape: each one must be caught ------------------------------------
MUTANTS = {
    # The 'before' shape, reachable without the sdist: copy after every step.
    "copy-always": (
        "        if self.speculator is not None:\n"
        "            self._copy_num_computed_tokens_to_cpu()",
        "        self._copy_num_computed_tokens_to_cpu()",
        {0: {"a"}, SPEC_STEPS: set()},
    ),
    # Wait unconditionally, as before the fix, even though nothing was copied.
    "wait-always": (
        "        if self.speculator is not None:\n"
        "            # The copy issued after the last step's sampling must have landed.\n"
        "            self.num_computed_tokens_event.synchronize()",
        "        self.num_computed_tokens_event.synchronize()\n"
        "        if self.speculator is not None:",
        {0: {"a"}, SPEC_STEPS: set()},
    ),
    # Without speculation, keep last step's CPU value instead of the scheduler's fresh one.
    "stale-mirror": (
        "refresh_from = states.num_computed_tokens_np",
        "refresh_from = states.num_computed_tokens_cpu",
        {0: {"b"}, SPEC_STEPS: set()},
    ),
    # With speculation, read the pinned buffer without waiting for the copy: poison.
    "no-wait": (
        "            self.num_computed_tokens_event.synchronize()\n",
        "",
        {0: set(), SPEC_STEPS: {"b", "c"}},
    ),
    # With speculation, trust the scheduler's optimistic count, which ignores rejected drafts.
    "optimistic": (
        "refresh_from = self.num_computed_tokens_cpu",
        "refresh_from = states.num_computed_tokens_np",
        {0: set(), SPEC_STEPS: {"b"}},
    ),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(mutant_source, name):
    old, new, expected = MUTANTS[name]
    runner = load_runner_class(mutant_source(old, new), SimulatedGPUModelRunner)
    for spec_steps, rules in expected.items():
        got = _rules(runner, RunnerSpec(MAX_REQS, spec_steps), REVEALING)
        assert got == rules, f"{name} with {spec_steps} spec steps"


def test_revealing_sequence_passes_on_the_fix(after_fix_source):
    runner = load_runner_class(after_fix_source, SimulatedGPUModelRunner)
    for spec_steps in (0, SPEC_STEPS):
        assert _rules(runner, RunnerSpec(MAX_REQS, spec_steps), REVEALING) == set()

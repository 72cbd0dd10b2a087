"""The ``_update_states`` probe judges what it reached: a method that leaves the batch behind the
schedule, or raises, fails for that reason (the real runner's pass is tests/ut/unit's)."""

from types import SimpleNamespace

import pytest

from vllm_syncgate.fakedev import simulated_accelerator
from vllm_syncgate.probes import ProblemCode, probe_update_states


@pytest.fixture(scope="module")
def story():
    from vllm_syncgate.unit.schedules import serving_story

    return serving_story()


def _runner():
    return SimpleNamespace(input_batch=SimpleNamespace(req_ids=[]))


def test_a_method_that_schedules_nothing_leaves_the_batch_behind(story):
    with simulated_accelerator("cuda") as acc:
        result = probe_update_states(lambda runner, output: None, _runner(), acc, story)
    assert result.codes == {ProblemCode.WRONG_VALUES}
    assert str(result.problems[0]).startswith(
        "wrong_values: step 1: three new requests, one chunked: the batch holds [], scheduled were")
    assert len(result.problems) == len(story)


def test_a_method_that_raises_is_named_where_it_raised_and_stops_the_story(story):
    def update_states(runner, output):
        runner.input_batch.req_ids = list(output.num_scheduled_tokens)
        if output.finished_req_ids:
            raise KeyError("req-random")

    with simulated_accelerator("cuda") as acc:
        result = probe_update_states(update_states, _runner(), acc, story)
    [problem] = result.problems
    assert problem.code is ProblemCode.RAISED
    assert problem.message == "step 5: one finished, one preempted: KeyError: 'req-random'"
    assert problem.site.endswith(":update_states")
    assert result.counts == {"copy_h2d_async": 0}


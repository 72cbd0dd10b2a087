"""The one judging function, on hand-made run records: classes, signatures, environment splits."""

import pytest

from vllm_syncgate.repro.judge import ReproVerdict, RunResult, environment_split, judge
from vllm_syncgate.repro.model import CiFailure, CiOutcome

CI = CiFailure("t.py::test_a", CiOutcome.FAILED)
HEADERS = {1: {"host": "a", "driver": "24.1", "env": {}, "env_set": ["PATH"]},
           2: {"host": "b", "driver": "24.1", "env": {}, "env_set": ["PATH"]},
           3: {"host": "c", "driver": "23.0", "env": {}, "env_set": ["PATH", "QUIRK"]},
           4: {"host": "d", "driver": "24.1", "env": {}, "env_set": ["PATH"]}}


def runs(per_shard, signature="AssertionError at t.py:3"):
    """{shard: 'FPF'} -> run records, run indices numbered across shards."""
    out, index = [], 0
    for shard, pattern in per_shard.items():
        for c in pattern:
            index += 1
            out.append(RunResult(index, "failed" if c == "F" else "passed",
                                 "call" if c == "F" else "", longrepr="E   boom" if c == "F" else "",
                                 signature=signature if c == "F" else "", shard=shard))
    return out


def verdict(per_shard, headers=HEADERS, replays=(), **kw):
    return judge(CI.nodeid, CI, runs(per_shard, **kw), list(replays), confidence=0.95,
                 interval_kind="exact", predecessors=("t.py::test_0",), headers=headers)


def test_every_class_from_records():
    assert verdict({1: "FFFF", 2: "FFFF"}).verdict is ReproVerdict.BROKEN
    assert verdict({1: "FPPF", 2: "PPFP"}).verdict is ReproVerdict.FLAKY
    nothing = verdict({1: "PPPP", 2: "PPPP"})
    assert nothing.verdict is ReproVerdict.NOT_REPRODUCED
    assert nothing.upper_bound == pytest.approx(1 - 0.05 ** (1 / 8))
    replay = RunResult(1, "failed", "call", replay=True)
    order = verdict({1: "PPPP"}, replays=[replay])
    assert order.verdict is ReproVerdict.ORDER_DEPENDENT
    assert "1 CI predecessor" in order.detail
    # a replay failure says nothing once the test fails alone too
    assert verdict({1: "PFPP"}, replays=[replay]).verdict is ReproVerdict.FLAKY


def test_broken_names_more_than_one_failure_signature():
    records = runs({1: "FF"}) + runs({2: "FF"}, signature="KeyError at t.py:9")
    v = judge(CI.nodeid, CI, records, [], confidence=0.95, interval_kind="exact")
    assert v.verdict is ReproVerdict.BROKEN
    assert v.detail == ("2 different failure signatures: AssertionError at t.py:3; "
                        "KeyError at t.py:9")


def test_fails_only_on_one_driver_names_the_driver_not_the_host():
    v = verdict({1: "PPPPP", 2: "PPPPP", 3: "FFFFF", 4: "PPPPP"})
    assert v.verdict is ReproVerdict.ENV_DEPENDENT
    assert (v.split.field, v.split.value, v.split.others) == ("driver", "23.0", ("24.1",))
    assert (v.split.failures, v.split.runs) == (5, 5)


def test_fails_only_where_a_variable_is_set_and_only_sometimes():
    headers = {i: {**h, "driver": "24.1"} for i, h in HEADERS.items()}
    v = verdict({1: "PPPPPP", 2: "PPPPPP", 3: "FFPFFF", 4: "PPPPPP"}, headers)
    assert (v.verdict, v.split.field, v.split.value) == (ReproVerdict.ENV_DEPENDENT,
                                                         "env_set.QUIRK", "set")
    assert (v.split.failures, v.split.runs) == (5, 6)


def test_one_bad_runner_with_nothing_else_different_is_named_by_host():
    headers = {i: {"host": f"runner-{i}"} for i in range(1, 5)}
    v = verdict({1: "PPPPP", 2: "FFFFF", 3: "PPPPP", 4: "PPPPP"}, headers)
    assert (v.split.field, v.split.value) == ("host", "runner-2")


@pytest.mark.parametrize("per_shard", [
    {1: "PPPPF", 2: "PPPPP", 3: "PPPPP", 4: "PPPPP"},  # one failure: chance can put it anywhere
    {1: "PFPPP", 2: "PPPPP", 3: "PFPPF", 4: "PPPPP"},  # failures on two drivers alike
    {3: "FFPFF"},  # one shard: nothing to compare
])
def test_chance_and_a_single_environment_are_not_environment_dependent(per_shard):
    assert verdict(per_shard).verdict is ReproVerdict.FLAKY


def test_split_needs_failures_confined_to_the_group():
    done = runs({1: "PPPPP", 2: "PPPPP", 3: "FFFFF", 4: "PPPPP"})
    assert environment_split(done, HEADERS, 0.005) is not None
    done[0].outcome = "failed"  # one failure elsewhere breaks the split
    assert environment_split(done, HEADERS, 0.005) is None

"""The seed-3 checker on hand-made step records."""

from __future__ import annotations

from syncgate.audit.events import CallSite, SyncEvent, SyncKind
from syncgate.npu.driver import StepRecord, check_seed3


def _record(speculative, events=(), copies=(), seq_lens=(3,), expected=(3,)):
    site = CallSite("runner.py", 7, "m")
    return StepRecord(
        index=0, speculative=speculative, req_ids=["a"], seq_lens=list(seq_lens),
        expected=list(expected),
        syncs=[SyncEvent(kind, "api", site) for kind in events],
        d2h_copies=[site for _ in copies],
    )


def test_checker_rules():
    wait, copy = [SyncKind.EVENT_SYNC], [1]
    assert check_seed3([_record(False)]) == []
    assert check_seed3([_record(True, wait, copy)]) == []
    # Other host waits are not what seed 3 is about (budgets handle them).
    assert check_seed3([_record(False, [SyncKind.DEVICE_SYNC])]) == []
    rules = [v.rule for v in check_seed3([_record(False, wait, copy)])]
    assert rules == ["a", "a"]
    assert [v.rule for v in check_seed3([_record(True, wait)])] == ["c"]
    assert [v.rule for v in check_seed3([_record(True, (), copy)])] == ["c"]
    assert [v.rule for v in check_seed3([_record(False, expected=(4,))])] == ["b"]
    message = str(check_seed3([_record(False, wait)])[0])
    assert message == "(a) step 0: event synchronize at runner.py:7:m"

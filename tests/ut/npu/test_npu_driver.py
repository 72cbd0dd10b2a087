"""The seq-lens sync checker on hand-made step records."""

from __future__ import annotations

from vllm_syncgate.audit.events import CallSite, SyncEvent, SyncKind
from vllm_syncgate.npu.driver import StepRecord, check_seq_lens_sync


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
    assert check_seq_lens_sync([_record(False)]) == []
    assert check_seq_lens_sync([_record(True, wait, copy)]) == []
    # Other host waits are not what the seq-lens sync property is about (budgets handle them).
    assert check_seq_lens_sync([_record(False, [SyncKind.DEVICE_SYNC])]) == []
    rules = [v.rule for v in check_seq_lens_sync([_record(False, wait, copy)])]
    assert rules == ["a", "a"]
    assert [v.rule for v in check_seq_lens_sync([_record(True, wait)])] == ["c"]
    assert [v.rule for v in check_seq_lens_sync([_record(True, (), copy)])] == ["c"]
    assert [v.rule for v in check_seq_lens_sync([_record(False, expected=(4,))])] == ["b"]
    message = str(check_seq_lens_sync([_record(False, wait)])[0])
    assert message == "(a) step 0: event synchronize at runner.py:7:m"

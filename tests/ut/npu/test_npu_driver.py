"""The per-step device-to-host watch and the seed-3 checker on hand-made records."""

from __future__ import annotations

import torch

from syncgate.audit.events import CallSite, SyncEvent, SyncKind
from syncgate.fakedev import simulated_accelerator
from syncgate.npu.driver import StepRecord, check_seed3, watch_d2h


def test_every_device_to_host_copy_is_noted_and_nothing_else():
    with simulated_accelerator("npu") as acc:
        dev = acc.device_tensor(torch.arange(4, dtype=torch.int32))
        host = torch.zeros(4, dtype=torch.int32)
        pinned = torch.empty(4, dtype=torch.int32, pin_memory=True)
        with watch_d2h() as watch:
            dev.cpu()
            dev.to("cpu")
            dev.to(device=torch.device("cpu"))
            pinned.copy_(dev, non_blocking=True)
            dev.copy_(host)  # host to device
            dev.add_(1)  # stays on the device
            host.copy_(host)  # host only
            dev.to(torch.int64)  # a dtype change, still on the device
        assert len(watch.sites) == 4
        assert {site.function for site in watch.sites} == {
            "test_every_device_to_host_copy_is_noted_and_nothing_else"
        }


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

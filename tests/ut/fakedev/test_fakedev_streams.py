"""Streams, events and the latency model: when work lands and how long the host waits."""

import dataclasses

import pytest
import torch

from vllm_syncgate.errors import SimulatorError, SimulatorInactiveError
from vllm_syncgate.fakedev import LatencyModel, is_poison, simulated_accelerator
from vllm_syncgate.fakedev.streams import calibration_sources


def test_async_copy_lands_only_when_host_waits_on_its_event():
    with simulated_accelerator("cuda") as acc:
        host = torch.zeros(4, dtype=torch.int64, pin_memory=True)
        dev = acc.device_tensor(torch.arange(4))
        host.copy_(dev, non_blocking=True)
        assert all(is_poison(v) for v in host.tolist())
        event = torch.cuda.Event()
        event.record()
        assert not event.query()
        event.synchronize()
        assert event.query()
        assert host.tolist() == [0, 1, 2, 3]
        assert acc.ledger.counts() == {"event_sync": 1}


def test_readback_and_event_wait_cover_only_their_own_stream():
    """H200: a .tolist() does not wait for other PyTorch streams (gpu-physics §2a)."""
    with simulated_accelerator("cuda") as acc:
        kv_stream = torch.cuda.Stream()
        acc.enqueue_work(0.050, kv_stream)  # a long KV transfer on another stream
        dev = acc.device_tensor(torch.arange(8))
        host = torch.empty(8, dtype=torch.int64, pin_memory=True)
        host.copy_(dev, non_blocking=True)
        event = torch.Event()
        event.record()
        event.synchronize()
        event_wait = acc.ledger.events[-1].blocked_s
        dev.tolist()
        readback_wait = acc.ledger.events[-1].blocked_s
        torch.cuda.synchronize()
        device_wait = acc.ledger.events[-1].blocked_s
    assert event_wait < 1e-4
    assert readback_wait < 1e-4
    assert device_wait == pytest.approx(0.050, rel=0.01)


def test_a_blocking_stream_orders_the_legacy_default_stream_after_it():
    with simulated_accelerator("cuda") as acc:
        side = acc.blocking_stream()
        acc.enqueue_work(0.020, side)
        acc.enqueue_work(0.0005)  # the legacy default stream starts after the blocking stream
        acc.device_tensor(torch.arange(8)).tolist()
        assert acc.ledger.events[-1].blocked_s == pytest.approx(0.0205, abs=1e-4)
        acc.enqueue_work(0.010)
        acc.enqueue_work(0.001, side)  # and the blocking stream after the default stream
        side.synchronize()
        assert acc.ledger.events[-1].blocked_s == pytest.approx(0.011, abs=1e-6)


def test_copies_in_one_direction_share_one_engine_in_the_order_they_become_ready():
    with simulated_accelerator("cuda") as acc:
        side = torch.cuda.Stream()
        acc.enqueue_work(0.010)  # the readback's copy is ready only after this
        acc.enqueue_copy("d2h_pinned", 1 << 30, side)  # ready now: served first
        acc.device_tensor(torch.arange(8))[3].item()
        big = acc.latency.copy_seconds(1 << 30, "d2h_pinned")
        assert acc.ledger.events[-1].blocked_s == pytest.approx(big, rel=0.01)
        acc.enqueue_copy("h2d_pinned", 1 << 30, side)  # the other direction does not delay it
        acc.device_tensor(torch.arange(8)).tolist()
        assert acc.ledger.events[-1].blocked_s < 1e-4


def test_a_pageable_readback_holds_other_threads_copies_until_it_returns():
    with simulated_accelerator("cuda") as acc:
        ids = acc.device_tensor(torch.arange(64))
        kv = acc.device_tensor(torch.zeros(1 << 20, dtype=torch.int32))
        acc.enqueue_work(0.020)
        ids.tolist()  # the model thread sits in the memcpy from 0 to ~20 ms
        with acc.host_thread("kv", start_s=0.004):
            kv_stream = torch.cuda.Stream()
            with torch.cuda.stream(kv_stream):
                start = acc.host_time
                kv.cpu()
                latency = acc.host_time - start
        assert latency == pytest.approx(0.0165, abs=1e-3)
        (hold,) = acc.ledger.holds
        assert hold.held_s == pytest.approx(0.016, abs=1e-4)
        assert hold.holder == "Tensor.tolist"
        assert acc.ledger.held_seconds() == hold.held_s
        assert acc.ledger.blocked_seconds() == pytest.approx(0.0200 + latency - hold.held_s, abs=1e-4)


@pytest.mark.parametrize("read", [
    lambda acc, ids: torch.cuda.synchronize(),
    lambda acc, ids: ids.to("cpu", non_blocking=True),
    lambda acc, ids: torch.empty(64, dtype=torch.int64, pin_memory=True).copy_(ids),
])
def test_waits_that_are_not_a_pageable_memcpy_hold_nobody(read):
    with simulated_accelerator("cuda") as acc:
        ids = acc.device_tensor(torch.arange(64))
        acc.enqueue_work(0.020)
        read(acc, ids)
        with acc.host_thread("kv", start_s=0.004):
            acc.device_tensor(torch.arange(8)).cpu()
        assert acc.ledger.holds == []


def test_calibration_constants_each_name_their_source():
    sources = calibration_sources()
    assert set(sources) == {f.name for f in dataclasses.fields(LatencyModel)}
    assert all(source for _value, source in sources.values())


def test_wait_stream_orders_side_stream_after_main_stream():
    with simulated_accelerator("cuda") as acc:
        main = torch.cuda.current_stream()
        acc.enqueue_work(0.010)
        side = torch.cuda.Stream()
        side.wait_stream(main)
        with torch.cuda.stream(side):
            assert torch.cuda.current_stream() == side
            marker_event = torch.cuda.Event()
            marker_event.record()
        assert torch.cuda.current_stream() == main
        marker_event.synchronize()
        assert acc.ledger.events[-1].blocked_s == pytest.approx(0.010)


def test_stream_and_device_synchronize_are_recorded_with_their_kind():
    with simulated_accelerator("npu") as acc:
        s = torch.npu.Stream()
        s.synchronize()
        torch.npu.synchronize()
        torch.accelerator.synchronize()
        assert acc.ledger.counts() == {"stream_sync": 1, "device_sync": 2}
        assert [e.api for e in acc.ledger.events] == [
            "torch.npu.Stream.synchronize",
            "torch.npu.synchronize",
            "torch.accelerator.synchronize",
        ]


def test_elapsed_time_uses_simulated_clock():
    with simulated_accelerator("cuda") as acc:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        acc.enqueue_work(0.002)
        end.record()
        assert start.elapsed_time(end) == pytest.approx(2.0)
        with pytest.raises(SimulatorError):
            torch.cuda.Event().elapsed_time(end)


def test_use_outside_context_is_a_clear_error_and_torch_is_restored():
    originals = (torch.cuda.Event, torch.cuda.synchronize, torch.Event, torch.accelerator.synchronize)
    had_npu = hasattr(torch, "npu")
    with simulated_accelerator("cuda") as acc:
        event = torch.cuda.Event()
        dev = acc.device_tensor(torch.ones(2))
    assert (torch.cuda.Event, torch.cuda.synchronize, torch.Event, torch.accelerator.synchronize) == originals
    assert hasattr(torch, "npu") == had_npu
    with pytest.raises(SimulatorInactiveError, match=r"after its accelerator context closed"):
        event.synchronize()
    with pytest.raises(SimulatorInactiveError):
        dev.tolist()


def test_torch_is_restored_when_the_body_raises():
    original_npu = getattr(torch, "npu", None)
    original_event = torch.Event
    def body():
        with simulated_accelerator("npu"):
            assert torch.npu.current_stream() is not None
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        body()
    assert getattr(torch, "npu", None) is original_npu
    assert torch.Event is original_event
    assert not hasattr(torch.Tensor, "npu") or original_npu is not None


def test_accelerators_do_not_nest():
    with (
        simulated_accelerator("cuda"),
        pytest.raises(SimulatorError, match="do not nest"),
        simulated_accelerator("npu"),
    ):
        pass


def test_unknown_flavour_is_rejected():
    with pytest.raises(SimulatorError, match="unknown accelerator flavour 'tpu'"), simulated_accelerator("tpu"):
        pass

"""Streams, events and the latency model: when work lands and how long the host waits."""

import pytest
import torch

from syncgate.errors import SimulatorError, SimulatorInactiveError
from syncgate.fakedev import LatencyModel, is_poison, simulated_accelerator


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


def test_event_wait_covers_only_its_own_stream_but_readback_waits_for_all():
    latency = LatencyModel(copy_latency_s=1e-6, copy_bandwidth_bytes_per_s=1e12)
    with simulated_accelerator("cuda", latency=latency) as acc:
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
    assert event_wait < 1e-4
    assert readback_wait == pytest.approx(0.050, rel=0.01)


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

"""Device tensors: what counts as a readback, a blocking copy, or free device work."""

import warnings

import numpy as np
import pytest
import torch

from vllm_syncgate.fakedev import DeviceTensor, is_poison, simulated_accelerator


@pytest.mark.parametrize(
    ("read", "api"),
    [
        (lambda t: t.tolist(), "Tensor.tolist"),
        (lambda t: t[0].item(), "Tensor.item"),
        (lambda t: t.cpu(), "Tensor.cpu"),
        (lambda t: t.numpy(), "Tensor.numpy"),
        (lambda t: bool(t[0]), "Tensor.__bool__"),
        (lambda t: t.to("cpu"), "Tensor.to (device to host)"),
        (lambda t: np.asarray(t), "Tensor.__array__"),
        (lambda t: t.nonzero(), "Tensor.nonzero"),
        (lambda t: t[t > 1], "Tensor.__getitem__ (boolean mask)"),
    ],
)
def test_each_readback_of_a_device_tensor_is_recorded(read, api):
    with simulated_accelerator("cuda") as acc:
        t = acc.device_tensor(torch.tensor([3, 1, 2]))
        read(t)
        assert acc.ledger.counts() == {"blocking_readback": 1}
        assert acc.ledger.events[0].api == api
        assert acc.ledger.events[0].site.function.startswith("test_each_readback") or "<lambda>" in str(
            acc.ledger.events[0].site
        )


def test_device_arithmetic_and_slicing_stay_on_device_without_syncs():
    with simulated_accelerator("cuda") as acc:
        t = torch.arange(6, device="cuda")
        u = (t * 2)[1:4].reshape(3, 1)
        assert isinstance(u, DeviceTensor)
        assert u.device.type == "cuda"
        assert torch.zeros_like(u).device.type == "cuda"
        assert acc.ledger.counts() == {}


def test_non_blocking_into_pageable_memory_is_a_blocking_copy():
    with simulated_accelerator("cuda") as acc:
        pageable = torch.zeros(3, dtype=torch.int64)
        pageable.copy_(acc.device_tensor(torch.tensor([7, 8, 9])), non_blocking=True)
        assert pageable.tolist() == [7, 8, 9]  # it blocked, so the data is there
        assert acc.ledger.counts() == {"blocking_copy": 1}
        assert acc.ledger.events[0].detail == "non_blocking into pageable memory"


def test_non_blocking_to_cpu_lands_in_pinned_memory_asynchronously():
    with simulated_accelerator("cuda") as acc:
        host = acc.device_tensor(torch.tensor([4, 5])).to("cpu", non_blocking=True)
        assert host.is_pinned()
        assert all(is_poison(v) for v in host.tolist())
        torch.cuda.current_stream().synchronize()
        assert host.tolist() == [4, 5]


def test_host_to_device_copies_pinned_is_async_pageable_blocks():
    with simulated_accelerator("npu") as acc:
        pinned = torch.ones(4, pin_memory=True)
        dev = pinned.to("npu", non_blocking=True)
        assert dev.device.type == "npu"
        assert acc.ledger.counts() == {}
        torch.ones(4).npu(non_blocking=True)
        assert acc.ledger.counts() == {"blocking_copy": 1}


def test_sync_debug_mode_warns_like_torch_for_what_torch_sees():
    with simulated_accelerator("cuda") as acc:
        torch.cuda.set_sync_debug_mode("warn")
        assert torch.cuda.get_sync_debug_mode() == 1
        t = acc.device_tensor(torch.tensor([1]))
        with pytest.warns(UserWarning, match="called a synchronizing CUDA operation"):
            t.item()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            torch.cuda.synchronize()  # torch's debug mode does not see device synchronize
            torch.zeros(1, dtype=t.dtype).copy_(t, non_blocking=True)  # nor a pageable non_blocking copy
        assert acc.ledger.counts()["blocking_copy"] == 1  # ...which the ledger still records
        torch.cuda.set_sync_debug_mode("error")
        with pytest.raises(RuntimeError, match="synchronizing CUDA operation"):
            t.tolist()
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            torch.cuda.set_sync_debug_mode("loud")


def test_ledger_attributes_syncs_to_open_steps():
    from vllm_syncgate.audit import StepKind

    with simulated_accelerator("cuda") as acc:
        t = acc.device_tensor(torch.tensor([1, 2]))
        t.tolist()
        with acc.ledger.step(StepKind.DECODE):
            t.tolist()
            torch.cuda.synchronize()
        assert acc.ledger.counts(StepKind.DECODE) == {"blocking_readback": 1, "device_sync": 1}
        assert acc.ledger.counts(StepKind.OUTSIDE) == {}
        assert len(acc.ledger.outside) == 1


def test_every_device_to_host_copy_is_noted_with_its_site_and_nothing_else():
    with simulated_accelerator("npu") as acc:
        dev = acc.device_tensor(torch.arange(4, dtype=torch.int32))
        host = torch.zeros(4, dtype=torch.int32)
        pinned = torch.empty(4, dtype=torch.int32, pin_memory=True)
        first = len(acc.activity)
        dev.cpu()
        dev.to("cpu")
        dev.to(device=torch.device("cpu"))
        pinned.copy_(dev, non_blocking=True)
        dev.copy_(host)  # host to device
        dev.add_(1)  # stays on the device
        host.copy_(host)  # host only
        dev.to(torch.int64)  # a dtype change, still on the device
        sites = acc.copies_to_host(since=first)
        assert len(sites) == 4
        assert {site.function for site in sites} == {
            "test_every_device_to_host_copy_is_noted_with_its_site_and_nothing_else"
        }

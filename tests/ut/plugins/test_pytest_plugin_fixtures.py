"""An outside test suite gets the simulated accelerator and its ledger through syncgate's fixtures."""

SUITE = '''
import pytest
import torch

def test_cuda_default(fake_accelerator, sync_audit):
    t = fake_accelerator.device_tensor(torch.tensor([1, 2]))
    assert t.device.type == "cuda"
    t.tolist()
    assert sync_audit.counts() == {"blocking_readback": 1}

@pytest.mark.parametrize("fake_accelerator", ["npu"], indirect=True)
def test_npu_flavour(fake_accelerator, sync_audit):
    torch.npu.synchronize()
    assert sync_audit.counts() == {"device_sync": 1}

def test_torch_restored_after_fixture():
    assert torch.cuda.Event.__module__.startswith("torch")
    assert torch.Event.__module__ == "torch"

def test_device_option(syncgate_device):
    assert syncgate_device == "npu"
'''


def test_fixtures_work_in_an_outside_suite(pytester):
    pytester.makepyfile(test_outside=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--syncgate-device", "npu")
    result.assert_outcomes(passed=4)


def test_a_wrong_expectation_in_an_outside_suite_fails(pytester):
    pytester.makepyfile(
        test_wrong="""
import torch
def test_wrong(fake_accelerator, sync_audit):
    fake_accelerator.device_tensor(torch.ones(1)).item()
    assert sync_audit.counts() == {}
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)

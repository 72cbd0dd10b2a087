"""A local rebound to a new pageable tensor on one path (vllm-ascend's attention builder padded
its host query starts with ``torch.cat`` before a ``non_blocking`` upload, #4511): the upload
after the branch blocks on that path, so it fails; ``.to(t.device)`` of a host ``t`` stays on
the host (no upload, and no readback of what it made). Fixture: tests/data/scan/maypageable.
Broken variants lose the marked line or report the host ``.tolist()``."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import values
from vllm_syncgate.scan.values import Pin

ENTRY = ["PadModelRunner.execute_model"]


@pytest.fixture
def runner(scan_data: Path) -> Path:
    return scan_data / "maypageable" / "pad_runner.py"


@pytest.fixture
def reported(sites_of):
    return lambda path: sites_of(path, ENTRY, "npu")


def test_the_upload_after_the_padding_fails_at_the_marked_line(reported, runner, expected_sites):
    expected = expected_sites(runner)
    assert len(expected) == 1
    assert reported(runner) == expected


def test_broken_variant_every_binding_must_agree_on_the_pin(reported, runner, monkeypatch,
                                                            expected_sites):
    monkeypatch.setattr(values, "_may_pin", lambda found: values._agree(found, Pin.UNKNOWN))
    (site,) = expected_sites(runner)
    assert site not in reported(runner)


def test_broken_variant_to_a_host_tensors_device_taken_as_an_upload(reported, runner, monkeypatch):
    monkeypatch.setattr(values.ValueModel, "to_host_device", lambda self, call: False)
    reported = reported(runner)
    # the padding entry is taken for a device tensor: the cat is no host result, and the
    # host .tolist() of the padded starts becomes a readback
    assert any(kind == "blocking_readback" for _, _, kind, _ in reported)

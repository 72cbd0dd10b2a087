"""pytest plugin (entry point ``pytest11``): syncgate's fixtures for any test suite.

- ``fake_accelerator``: a simulated CUDA accelerator installed for one test (``npu`` flavour via
  ``@pytest.mark.parametrize("fake_accelerator", ["npu"], indirect=True)``).
- ``sync_audit``: the ledger of that accelerator.
- ``--syncgate-device``: the device profile serve-level tests run against (default ``cpu``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

DEVICES = ("cpu", "cuda", "npu")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("syncgate")
    group.addoption(
        "--syncgate-device",
        choices=DEVICES,
        default="cpu",
        help="device profile for serve-level tests (default: cpu)",
    )


@pytest.fixture
def syncgate_device(request: pytest.FixtureRequest) -> str:
    """The device profile chosen with ``--syncgate-device``."""
    return str(request.config.getoption("--syncgate-device"))


@pytest.fixture
def fake_accelerator(request: pytest.FixtureRequest) -> Iterator[object]:
    """A simulated accelerator installed over torch for the duration of one test."""
    from syncgate.fakedev import simulated_accelerator

    flavour = getattr(request, "param", "cuda")
    with simulated_accelerator(flavour) as accelerator:
        yield accelerator


@pytest.fixture
def sync_audit(fake_accelerator: object) -> object:
    """The sync ledger of ``fake_accelerator``."""
    return fake_accelerator.ledger  # type: ignore[attr-defined]

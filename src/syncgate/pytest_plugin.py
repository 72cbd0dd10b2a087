"""pytest plugin (entry point ``pytest11``): syncgate's fixtures for any test suite.

- ``fake_accelerator``: a simulated CUDA accelerator installed for one test (``npu`` flavour via
  ``@pytest.mark.parametrize("fake_accelerator", ["npu"], indirect=True)``).
- ``sync_audit``: the ledger of that accelerator.
- ``ascend_before_source``: the extracted vllm-ascend 0.23.0.post1 sdist (cached; skips if absent).
- ``group_server``: factory of the running server session for one group of the device profile.
- ``--syncgate-device``: the device profile serve-level tests run against (default ``cpu``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from syncgate.profiles import DEVICES


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


@pytest.fixture(scope="session")
def ascend_before_source() -> Path:
    """Source root of vllm-ascend 0.23.0.post1 (before PR #13382); skips when it cannot be had."""
    from syncgate.errors import EnvironmentProblem
    from syncgate.upstream_sources import ascend_sdist

    try:
        return ascend_sdist("0.23.0.post1")
    except EnvironmentProblem as exc:
        pytest.skip(f"vllm-ascend 0.23.0.post1 sdist unavailable: {exc}")


@pytest.fixture(scope="session")
def syncgate_model() -> Path:
    """The embedded tiny model directory (built once per machine, cached by recipe hash)."""
    from syncgate.models import ensure_model, load_recipe

    return ensure_model(load_recipe())[0].path


@pytest.fixture(scope="session")
def group_server(
    request: pytest.FixtureRequest, syncgate_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[object]:
    """Factory ``group_server(group_name)``: the session (a healthy server, audit armed) of a
    group of the ``--syncgate-device`` profile, shared by consecutive tests of that group.

    Not :func:`syncgate.serve.vllm.vllm_server`, which makes one bare, unstarted server."""
    from syncgate.check.pool import ServerPool
    from syncgate.profiles import builtin_profile_path, load_profile

    device = str(request.config.getoption("--syncgate-device"))
    pool = ServerPool(load_profile(builtin_profile_path(device)), syncgate_model,
                      tmp_path_factory.mktemp("vllm-servers"), say=lambda message: None)
    yield pool.get
    pool.close()

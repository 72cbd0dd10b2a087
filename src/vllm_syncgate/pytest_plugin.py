"""pytest plugin (entry point ``pytest11``): syncgate's fixtures for any test suite.

- ``fake_accelerator``: a simulated CUDA accelerator installed for one test (``npu`` flavour via
  ``@pytest.mark.parametrize("fake_accelerator", ["npu"], indirect=True)``).
- ``sync_audit``: the ledger of that accelerator.
- ``ascend_before_source``: the extracted vllm-ascend 0.23.0.post1 sdist (cached; skips if absent).
- ``group_server``: factory of the running server session for one group of the device profile.
- ``--syncgate-device``: the device profile serve-level tests run against (default ``cpu``).
- ``syncgate_npu_property`` / ``syncgate_probes``: the unit level of ``syncgate check`` as
  fixtures, for an upstream repo's own tests (``--syncgate-ascend-source``,
  ``--syncgate-ascend-mode``, marker ``syncgate_ascend_source(path)``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vllm_syncgate.profiles import DEVICES
from vllm_syncgate.unit import ASCEND_MODES


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("syncgate")
    group.addoption(
        "--syncgate-device",
        choices=DEVICES,
        default="cpu",
        help="device profile for serve-level tests (default: cpu)",
    )
    group.addoption(
        "--syncgate-ascend-source",
        metavar="PATH",
        help="vllm-ascend tree for syncgate_npu_property (default: $SYNCGATE_ASCEND_SOURCE, else "
        "the rootdir when it is a vllm-ascend checkout)",
    )
    group.addoption(
        "--syncgate-ascend-mode",
        choices=ASCEND_MODES,
        default="auto",
        help="how syncgate_npu_property gets NPUModelRunner: the real class (import), the parsed "
        "file (ast), or the real class where it imports (auto, the default)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "syncgate_ascend_source(path): the vllm-ascend tree syncgate_npu_property checks "
        "in this test (overrides --syncgate-ascend-source)")


@pytest.fixture
def syncgate_npu_property(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``check(source=None, mode=None) -> UnitReport``: the NPU seq-lens sync property (no sync
    without speculation, seq_lens equal to the reference, no read before the event) on a
    vllm-ascend tree's ``NPUModelRunner``, as ``syncgate check``'s unit level runs it."""
    from vllm_syncgate.npu.harness import AscendSource
    from vllm_syncgate.unit.ascend import npu_property

    marker = request.node.get_closest_marker("syncgate_ascend_source")
    configured = (marker.args[0] if marker else None) or request.config.getoption(
        "--syncgate-ascend-source") or os.environ.get("SYNCGATE_ASCEND_SOURCE")

    def check(source: str | Path | None = None, mode: str | None = None) -> Any:
        root = source or configured or request.config.rootpath
        return npu_property(AscendSource.at(root),
                            mode or str(request.config.getoption("--syncgate-ascend-mode")))

    return check


@pytest.fixture
def syncgate_probes() -> Callable[..., Any]:
    """``check(flavour="cuda") -> UnitReport``: the probes (``_to_list``, async output, buffer
    sizing) on the installed vLLM's runner classes, on a simulated ``flavour`` device."""
    from vllm_syncgate.unit.vllm_probes import probe_vllm

    return probe_vllm


@pytest.fixture
def syncgate_device(request: pytest.FixtureRequest) -> str:
    """The device profile chosen with ``--syncgate-device``."""
    return str(request.config.getoption("--syncgate-device"))


@pytest.fixture
def fake_accelerator(request: pytest.FixtureRequest) -> Iterator[object]:
    """A simulated accelerator installed over torch for the duration of one test."""
    from vllm_syncgate.fakedev import simulated_accelerator

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
    from vllm_syncgate.errors import EnvironmentProblem
    from vllm_syncgate.upstream_sources import ascend_sdist

    try:
        return ascend_sdist("0.23.0.post1")
    except EnvironmentProblem as exc:
        pytest.skip(f"vllm-ascend 0.23.0.post1 sdist unavailable: {exc}")


@pytest.fixture(scope="session")
def syncgate_model() -> Path:
    """The embedded tiny model directory (built once per machine, cached by recipe hash)."""
    from vllm_syncgate.models import ensure_model, load_recipe

    return ensure_model(load_recipe())[0].path


@pytest.fixture(scope="session")
def group_server(
    request: pytest.FixtureRequest, syncgate_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[object]:
    """Factory ``group_server(group_name)``: the session (a healthy server, audit armed) of a
    group of the ``--syncgate-device`` profile, shared by consecutive tests of that group.

    Not :func:`vllm_syncgate.serve.vllm.vllm_server`, which makes one bare, unstarted server."""
    from vllm_syncgate.check.pool import ServerPool
    from vllm_syncgate.profiles import builtin_profile_path, load_profile

    device = str(request.config.getoption("--syncgate-device"))
    pool = ServerPool(load_profile(builtin_profile_path(device)), syncgate_model,
                      tmp_path_factory.mktemp("vllm-servers"), say=lambda message: None)
    yield pool.get
    pool.close()

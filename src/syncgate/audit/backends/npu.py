"""The NPU backend: torch_npu's ``torch.npu.set_sync_debug_mode`` plus counted waits.

torch_npu exposes the same debug-mode API as CUDA (not in its Python docs; see
``torch_npu/npu/utils.py``) and warns "called a synchronizing NPU operation". vllm-ascend swaps
``torch.Event`` and ``torch.cuda.*`` for their ``torch.npu`` twins during runner construction and
leaves them installed, so counting ``torch.npu.Event``/``Stream`` in place covers both spellings.
vLLM's own sync check is CUDA-only, so on NPU this backend is the only detector.
"""

from __future__ import annotations

from typing import ClassVar

from syncgate.audit.backends.syncdebug import SyncDebugBackend


class NpuBackend(SyncDebugBackend):
    device: ClassVar[str] = "npu"
    namespace: ClassVar[str] = "npu"
    warning_text: ClassVar[str] = "called a synchronizing NPU operation"

"""The CUDA backend: ``torch.cuda`` sync debug mode plus counted waits (see :mod:`.syncdebug`).

It runs next to vLLM's ``VLLM_GPU_SYNC_CHECK`` (``vllm/utils/gpu_sync_debug.py``): both arm the
same process-global debug mode with save/restore around the same calls, and this backend reads
warnings before vLLM's ``showwarning`` hook decides whether to raise. vLLM's copy checkers replace
``Tensor.copy_``/``to``/``cuda``; the backend's copy watch matches them too, so a ``non_blocking``
copy through pageable memory is counted whether or not vLLM's check runs (on an H200 it blocked
8 ms behind an 8 ms kernel; see ``syncgate calibrate``).
"""

from __future__ import annotations

from typing import ClassVar

from vllm_syncgate.audit.backends.syncdebug import SyncDebugBackend


class CudaBackend(SyncDebugBackend):
    device: ClassVar[str] = "cuda"
    namespace: ClassVar[str] = "cuda"
    warning_text: ClassVar[str] = "called a synchronizing CUDA operation"

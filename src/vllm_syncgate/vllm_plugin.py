"""vLLM general plugin (entry point ``vllm.general_plugins: syncgate``): the live sync audit.

vLLM calls :func:`register` in each of its processes (API server, EngineCore, worker). Unless
``SYNCGATE_AUDIT_DIR`` is set it does nothing at all. When set, each process journals into that
directory and the worker counts host waits per runner step with the backend of its platform
(:mod:`vllm_syncgate.audit.backends`); ``SYNCGATE_MUTANT``, which only ``syncgate check --mutant``
sets in its servers' environment, arms a deliberately sync-heavy runner variant
(:mod:`vllm_syncgate.audit.mutants`). :func:`vllm_syncgate.audit.collect.load_audit_dir` reads the
directory back. Everything heavy happens lazily, when a model runner module is imported.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from vllm_syncgate.audit.journal import ENV_AUDIT_DIR, ENV_MUTANT

if TYPE_CHECKING:
    from vllm_syncgate.audit.backends.session import LiveAudit

_active: LiveAudit | None = None


def register() -> None:
    """Arm the audit in this process if ``SYNCGATE_AUDIT_DIR`` is set; idempotent."""
    global _active
    directory = os.environ.get(ENV_AUDIT_DIR)
    if not directory or _active is not None:
        return
    from vllm_syncgate.audit.mutants import check_mutant  # imports torch: only once armed

    mutant = os.environ.get(ENV_MUTANT) or None
    if mutant:
        check_mutant(mutant)  # before anything heavy: a typo must fail fast and say so
    from vllm.platforms import current_platform

    from vllm_syncgate.audit.backends.session import LiveAudit

    _active = LiveAudit(Path(directory), current_platform.device_type, mutant).start()

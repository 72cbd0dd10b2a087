"""Deliberately sync-heavy runner variants, armed with ``SYNCGATE_MUTANT=<name>``.

They prove the gate fails for the right reason: a mutant only *does* the blocking thing; it never
reports itself. The backend has to observe it through the same counting as real runner code, and
the verdict has to name the mutant's own lines (this module is treated as runner code by
:func:`syncgate.audit.events.caller_site`).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch

from syncgate.errors import UsageError

ENV_MUTANT = "SYNCGATE_MUTANT"


class SyncHeavyRunner:
    """Runner methods written the way #22760 removed: block the host to read sampled ids."""

    def _to_list(self, sampled_token_ids: torch.Tensor) -> list[list[int]]:
        torch.accelerator.synchronize()
        return sampled_token_ids.tolist()


MUTANTS: dict[str, dict[str, Callable[..., Any]]] = {
    "sync_heavy_to_list": {"_to_list": SyncHeavyRunner._to_list},
}


def check_mutant(name: str) -> str:
    """``name`` if it is a known mutant, else a :class:`UsageError` listing the known ones."""
    if name not in MUTANTS:
        raise UsageError(f"{ENV_MUTANT}={name!r}: unknown mutant (known: {', '.join(MUTANTS)})")
    return name


def apply_mutant(runner: Any, name: str) -> None:
    """Replace methods on one runner instance (its class and other runners stay intact)."""
    for attr, fn in MUTANTS[check_mutant(name)].items():
        setattr(runner, attr, types.MethodType(fn, runner))

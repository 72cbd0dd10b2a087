"""Deliberately sync-heavy runner variants, armed from the test suite only.

``syncgate check --mutant NAME`` (hidden from ``--help``; the e2e proofs use it) hands ``NAME`` to
its servers alone; the terminal and report.json name it. ``syncgate check`` drops a
``SYNCGATE_MUTANT`` it inherits, so a leftover in a shell changes no verdict.

They prove the gate fails for the right reason: a mutant only *does* the blocking thing; it never
reports itself. The backend has to observe it through the same counting as real runner code, and
the verdict has to name the mutant's own lines (this module is treated as runner code by
:func:`vllm_syncgate.audit.events.caller_site`).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch

from vllm_syncgate.errors import UsageError


class SyncHeavyRunner:
    """Runner methods written the way #22760 removed: block the host to read sampled ids."""

    def _to_list(self, sampled_token_ids: torch.Tensor) -> list[list[int]]:
        torch.accelerator.synchronize()
        return sampled_token_ids.tolist()


class WrappingToList:
    """A subclass override of ``_to_list`` that keeps the runner's own transfer wait and adds a
    device-wide synchronize in front of it.

    It is an override in the MRO sense (mixed in ahead of the runner's class), so an allow rule
    with ``overrides = true`` on ``_to_list`` sees it as an override of that method: the gate must
    still count the synchronize it adds.
    """

    def _to_list(self, sampled_token_ids: torch.Tensor) -> list[list[int]]:
        torch.accelerator.synchronize()
        return super()._to_list(sampled_token_ids)  # type: ignore[misc]


def _bind(methods: dict[str, Callable[..., Any]]) -> Callable[[Any], None]:
    """Replace methods on one runner instance (its class and other runners stay intact)."""

    def apply(runner: Any) -> None:
        for attr, fn in methods.items():
            setattr(runner, attr, types.MethodType(fn, runner))

    return apply


def _subclass(mixin: type) -> Callable[[Any], None]:
    """Make one runner instance of a subclass that puts ``mixin``'s overrides ahead of its class."""

    def apply(runner: Any) -> None:
        cls = type(runner)
        runner.__class__ = type(f"{mixin.__name__}{cls.__name__}", (mixin, cls),
                                {"__module__": __name__})

    return apply


MUTANTS: dict[str, Callable[[Any], None]] = {
    "sync_heavy_to_list": _bind({"_to_list": SyncHeavyRunner._to_list}),
    "wrapping_to_list": _subclass(WrappingToList),
}


def check_mutant(name: str) -> str:
    """``name`` if it is a known mutant, else a :class:`UsageError` listing the known ones."""
    if name not in MUTANTS:
        raise UsageError(f"mutant {name!r}: unknown (known: {', '.join(MUTANTS)})")
    return name


def apply_mutant(runner: Any, name: str) -> None:
    """Turn one runner instance into the mutant ``name``."""
    MUTANTS[check_mutant(name)](runner)

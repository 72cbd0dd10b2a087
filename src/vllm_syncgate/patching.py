"""Reversible attribute patches: the audit backends and the simulated accelerator both swap
attributes on torch, vLLM and runner classes, and must leave them exactly as they found them.
"""

from __future__ import annotations

import contextlib
from typing import Any

_MISSING = object()


class Patches:
    """Attribute replacements that can all be undone, newest first.

    An attribute the owner did not define itself (absent, or inherited) is deleted again on
    restore, so the inherited one shows through; one that is already gone stays gone.
    """

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        old = vars(owner).get(name, _MISSING)
        setattr(owner, name, value)  # raises TypeError on an immutable type: nothing to undo
        self._undo.append((owner, name, old))

    def restore(self) -> None:
        while self._undo:
            owner, name, old = self._undo.pop()
            if old is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
            else:
                setattr(owner, name, old)

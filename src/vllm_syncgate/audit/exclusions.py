"""Files a project excludes from the scan's gate on purpose, each with a reason.

In gate mode a file the scan could not read or parse fails the gate (a sync moved into an
unreadable file must not pass), unless the budget (``[[exclude]]``) or ``[tool.syncgate]``
(``exclude``) lists it with the reason it need not be read.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from vllm_syncgate.errors import ConfigError


@dataclass(frozen=True)
class Exclusion:
    path: str  # a glob, matched against the file's path or any tail of it
    reason: str

    def matches(self, file: str) -> bool:
        posix = PurePosixPath(file.replace("\\", "/")).as_posix()
        return fnmatch.fnmatchcase(posix, self.path) or fnmatch.fnmatchcase(posix, f"*/{self.path}")


def parse_exclusions(raw: Any, source: Any, where: str, error: type[ConfigError]) -> tuple[Exclusion, ...]:
    """``[{path = "glob", reason = "why"}, ...]``; anything else is ``error`` naming the key."""
    if not isinstance(raw, list):
        raise error(source, where, "must be an array of tables with path and reason")
    out = []
    for i, item in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(item, dict) or set(item) - {"path", "reason"}:
            raise error(source, here, "must be a table with only path and reason")
        path, reason = item.get("path"), item.get("reason")
        if not isinstance(path, str) or not path.strip():
            raise error(source, f"{here}.path", "must be a non-empty path or glob")
        if not isinstance(reason, str) or not reason.strip():
            raise error(source, f"{here}.reason", "must say why the file need not be read")
        out.append(Exclusion(path.strip(), reason.strip()))
    return tuple(out)

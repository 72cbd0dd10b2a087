"""The functions a branch changed that its decode step can run and no unit probe ran.

The unit level's probes run a few runner methods (``_to_list``, the async output, the runner's
construction, ``_update_states`` and its helpers); a branch that changes any other code of the
step (a helper such as ``_prepare_input_ids``, an attention metadata builder, a sampler op)
would otherwise pass the level untested. With ``--source``, the child traces which of the tree's
functions the probes ran (:mod:`vllm_syncgate.unit.ran`); of the functions the step can run
(``reached``: the scan's own call graph, :attr:`vllm_syncgate.scan.callgraph.ScanResult.reached`)
each one whose code differs from the installed build's (AST, line numbers aside, as
:mod:`~vllm_syncgate.check.untested` compares; a new one counts) and that did not run is named
here. Changed code the step never runs (entry points, the CLI, config parsing, warm-up) is not.
Whether another level covered it is :func:`vllm_syncgate.check.levels.unit_coverage`'s call.
"""

from __future__ import annotations

import ast
import filecmp
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllm_syncgate.check.untested import Method, parse_source


@dataclass(frozen=True)
class NotProbed:
    """A changed function of the tree that no unit probe ran."""

    module: str
    qualname: str
    file: Path
    line: int

    WHY = "not run by any unit probe"

    def describe(self) -> str:
        return f"{self.module}:{self.qualname}: {self.WHY}"


def not_probed(reached: Iterable[tuple[str, str]], package_dir: Path, installed: Path,
               ran: Iterable[tuple[str, str]]) -> list[NotProbed]:
    """Of the functions in ``reached`` (``(file, qualname)`` pairs: what the step can run), those
    in the tree's ``package_dir`` that differ from ``installed``'s and are not in ``ran``
    (``(file relative to the package, qualname)`` pairs), in file and line order."""
    done = set(ran)
    package_dir = package_dir.resolve()
    wanted: dict[Path, set[str]] = {}
    for file, qualname in reached:
        path = Path(file).resolve()  # the scan names files relative to where it runs
        if path.is_relative_to(package_dir):
            wanted.setdefault(path, set()).add(qualname)
    found = []
    for file in sorted(wanted):
        rel = file.relative_to(package_dir)
        for qualname, line in changed_functions(file, installed / rel):
            if qualname in wanted[file] and (rel.as_posix(), qualname) not in done:
                module = ".".join([package_dir.name, *rel.with_suffix("").parts])
                found.append(NotProbed(module.removesuffix(".__init__"), qualname, file, line))
    return found


def changed_functions(file: Path, before: Path) -> list[tuple[str, int]]:
    """``(qualname, line)`` of each function and method of ``file`` (module level and in classes,
    nested classes too) whose code differs from ``before``'s or that ``before`` lacks (a name
    defined twice, a property's getter and setter, is compared with each of its definitions)."""
    if before.is_file() and filecmp.cmp(file, before, shallow=False):
        return []
    old: dict[str, list[str]] = {}
    for name, fn in _functions(_body(before)):
        old.setdefault(name, []).append(ast.dump(fn))
    return [(name, fn.lineno) for name, fn in _functions(_body(file))
            if ast.dump(fn) not in old.get(name, ())]


def _body(file: Path) -> list[ast.stmt]:
    tree = parse_source(file)
    return [] if tree is None else tree.body


def _functions(body: Sequence[ast.stmt], prefix: str = "") -> Iterator[tuple[str, Method]]:
    for node in body:
        if isinstance(node, Method):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body, f"{prefix}{node.name}.")

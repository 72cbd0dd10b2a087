"""Find, read and parse the scanned files; index their classes, methods and functions.

Nothing is imported: the runners need CUDA, torch_npu or a whole vLLM install to import, and a
scan must work on a bare source tree of any version. Base classes are resolved by name through
each module's imports, so ``class NPUModelRunner(GPUModelRunner)`` in vllm-ascend links to
vLLM's class when both trees are scanned together.
"""

from __future__ import annotations

import ast
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from vllm_syncgate.errors import ScanError
from vllm_syncgate.safeio import TooLarge, read_regular
from vllm_syncgate.scan.lines import python_lines

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(eq=False)
class SourceModule:
    path: Path
    display: str  # the path as reported (relative to the working directory when below it)
    name: str  # dotted module name, from the enclosing packages
    tree: ast.Module
    lines: list[str]
    # local name -> (module, attribute) for ``from M import A as local``; (module, "") for imports
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    followed: bool = False  # not named on the command line: reached through the runner's imports
    named: bool = False  # the command line names this very file (not a folder holding it)
    backend: bool = False  # a builder's side: its ops are read when a call reaches them


@dataclass(eq=False)
class ClassInfo:
    name: str
    module: SourceModule
    node: ast.ClassDef
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    bases: list[ClassInfo] = field(default_factory=list)

    @property
    def symbol(self) -> str:
        return f"{self.module.name}:{self.name}"


@dataclass(eq=False)
class FunctionInfo:
    name: str
    qualname: str  # ``Class.method`` or ``function``
    module: SourceModule
    node: FunctionNode
    owner: ClassInfo | None = None

    @property
    def symbol(self) -> str:
        """``module:qualname``, the form budget allow-lists match."""
        return f"{self.module.name}:{self.qualname}"


@dataclass(frozen=True)
class Problem:
    """A file that was not scanned, and why."""

    file: str
    reason: str


class Folders:
    """Real paths and package names of files, each folder resolved once: a scan resolves every
    file several times (the seen set, the path it shows, its module name), and
    ``os.path.realpath`` stats every component of a path each time."""

    def __init__(self) -> None:
        self._real: dict[Path, str] = {}
        self._real_files: dict[Path, Path] = {}
        self._packages: dict[str, list[str]] = {}
        self._files: dict[tuple[Path, str], Path | None] = {}

    def real(self, file: Path) -> Path:
        """``os.path.realpath(file)``: a file that is no symlink is its real folder's entry."""
        found = self._real_files.get(file)
        if found is None:
            if file.name in ("", ".", "..") or os.path.islink(file):
                found = Path(os.path.realpath(file))
            else:
                folder = self._real.get(file.parent)
                if folder is None:
                    folder = self._real[file.parent] = os.path.realpath(file.parent)
                found = Path(folder, file.name)
            self._real_files[file] = found
        return found

    def module_file(self, root: Path, name: str) -> Path | None:
        """The file of module ``name`` under ``root`` (``a/b.py`` or ``a/b/__init__.py``): the
        scanned modules import the same modules many times over."""
        key = (root, name)
        if key not in self._files:
            stem = root.joinpath(*name.split("."))
            self._files[key] = next(
                (f for f in (stem.with_suffix(".py"), stem / "__init__.py") if f.is_file()), None)
        return self._files[key]

    def packages(self, folder: Path) -> list[str]:
        """The names of ``folder`` (a real path) and the packages above it, innermost first,
        as far as each holds an ``__init__.py``."""
        key = str(folder)
        found = self._packages.get(key)
        if found is None:
            found = [folder.name, *self.packages(folder.parent)] \
                if (folder / "__init__.py").is_file() else []
            self._packages[key] = found
        return found


@dataclass
class SourceIndex:
    modules: list[SourceModule] = field(default_factory=list)
    classes: list[ClassInfo] = field(default_factory=list)
    functions: dict[tuple[str, str], FunctionInfo] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lines: int = 0
    _by_module: dict[tuple[str, str], ClassInfo] = field(default_factory=dict, repr=False)
    _by_name: dict[str, list[ClassInfo]] = field(default_factory=dict, repr=False)
    _mro: dict[int, list[ClassInfo]] = field(default_factory=dict, repr=False)
    _records: dict[str, list[FunctionInfo]] | None = field(default=None, repr=False)
    _methods: dict[str, list[FunctionInfo]] | None = field(default=None, repr=False)
    _modules_by_name: dict[str, SourceModule] | None = field(default=None, repr=False)
    # parses an op module (by dotted name) the first time a backend module's call reaches it
    load_op: Callable[[str], SourceModule | None] | None = field(default=None, repr=False)
    folders: Folders = field(default_factory=Folders, repr=False)

    def mro(self, cls: ClassInfo) -> list[ClassInfo]:
        """``class_mro(cls)``, kept per class."""
        cached = self._mro.get(id(cls))
        if cached is None:
            cached = self._mro[id(cls)] = class_mro(cls)
        return cached

    def lookup(
        self, cls: ClassInfo, method: str, after: ClassInfo | None = None
    ) -> FunctionInfo | None:
        """Resolve ``self.method`` (or ``super().method`` when ``after`` is the defining class)."""
        chain = self.mro(cls)
        if after is not None:
            position = next((i for i, c in enumerate(chain) if c is after), None)
            if position is None:
                return None
            chain = chain[position + 1 :]
        for candidate in chain:
            found = candidate.methods.get(method)
            if found is not None:
                return found
        return None

    def resolve_class(self, module: SourceModule, name: str) -> ClassInfo | None:
        """A class named in ``module`` (directly, via an import, or as a dotted path)."""
        if not self._by_module:
            self._by_module = {(c.module.name, c.name): c for c in self.classes}
            for c in self.classes:
                self._by_name.setdefault(c.name, []).append(c)
        return self._resolve(module, name, self._by_module)

    def record_methods(self, name: str) -> list[FunctionInfo]:
        """Methods called ``name`` of record classes (NamedTuple, dataclass): the containers the
        model and sampler return, whose methods a caller reaches without knowing the class."""
        if self._records is None:
            self._records = _methods_by_name(c for c in self.classes if is_record(c.node))
        return self._records.get(name, [])

    def only_method(self, name: str) -> FunctionInfo | None:
        """The one scanned method called ``name``, None when no class or several define it:
        ``tables[gid].host_array()`` reaches it without knowing the element's class."""
        if self._methods is None:
            self._methods = _methods_by_name(self.classes)
        found = self._methods.get(name, [])
        return found[0] if len(found) == 1 else None

    def resolve_function(self, module: SourceModule, name: str) -> FunctionInfo | None:
        target = module.imports.get(name)
        if target is not None and target[1]:
            found = self.functions.get(target)
            if found is None and module.backend and self.load_op is not None \
                    and self.load_op(target[0]) is not None:
                found = self.functions.get(target)  # an op, parsed now that a call reaches it
            return found or self._reexported(target)
        return self.functions.get((module.name, name))

    def _reexported(self, target: tuple[str, str]) -> FunctionInfo | None:
        """A function a scanned package's ``__init__`` re-exports (``from .chunk import
        chunk_gated_delta_rule`` in ``ops/fla/__init__.py``), followed a few imports deep."""
        if self._modules_by_name is None:
            self._modules_by_name = {m.name: m for m in self.modules}
        for _ in range(3):
            holder = self._modules_by_name.get(target[0])
            again = holder.imports.get(target[1]) if holder is not None else None
            if again is None or not again[1]:
                return None
            target = again
            found = self.functions.get(target)
            if found is not None:
                return found
        return None

    def _resolve(
        self, module: SourceModule, dotted: str, table: dict[tuple[str, str], ClassInfo]
    ) -> ClassInfo | None:
        head, _, rest = dotted.partition(".")
        imported = module.imports.get(head)
        if imported is not None:
            mod, attr = imported
            qualified = f"{mod}.{attr}".strip(".") if attr else mod
            full = f"{qualified}.{rest}" if rest else qualified
            parent, _, leaf = full.rpartition(".")
            if (parent, leaf) in table:
                return table[(parent, leaf)]
        local = table.get((module.name, dotted))
        if local is not None:
            return local
        same_name = self._by_name.get(dotted.rpartition(".")[2], [])
        return same_name[0] if len(same_name) == 1 else None


def collect_files(paths: list[str], folders: Folders | None = None) -> list[tuple[Path, str]]:
    """Every ``.py`` file under the given paths; a given file is taken whatever its suffix."""
    files: list[tuple[Path, str]] = []
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise ScanError(f"{missing[0]}: no such file or directory")
    cwd, folders = Path.cwd(), folders or Folders()
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            files.append((path, _display(path, cwd, folders)))
            continue
        for file in sorted(path.rglob("*.py")):
            parts = file.relative_to(path).parts[:-1]
            if any(part.startswith(".") or part == "__pycache__" for part in parts):
                continue  # .git, .venv, .tox inside a scanned tree
            files.append((file, _display(file, cwd, folders)))
    return files


def _display(file: Path, cwd: Path, folders: Folders) -> str:
    try:
        return str(folders.real(file).relative_to(cwd))
    except ValueError:
        return str(file)


def module_name(path: Path, folders: Folders | None = None) -> str:
    """Dotted name from the chain of enclosing packages (directories with ``__init__.py``)."""
    folders = folders or Folders()
    path = folders.real(path)
    parts = [] if path.stem == "__init__" else [path.stem]
    parts += folders.packages(path.parent)
    return ".".join(reversed(parts)) or path.stem


@dataclass(frozen=True)
class FileBudget:
    """What one file may cost before it is skipped (with a warning; the rest is scanned).

    Bytes bound reading and parsing; AST depth bounds the recursive analysis (vLLM's deepest
    file is under 30); seconds bound the read and parse of a file the two others let through.
    """

    max_bytes: int = 2 << 20
    max_depth: int = 100
    max_seconds: float = 10.0


def _everything(_name: str) -> bool:
    return True


def _nothing(_name: str) -> bool:
    return False


@dataclass(frozen=True)
class Follow:
    """What the scanned files' imports bring along from the same tree, unnamed on the command
    line: the modules ``modules`` names (the sampler, the drafters), and every module of a
    package ``packages`` names that defines a class ``defaults`` names (the default attention
    backend's builder, though the runner never imports it: builders are picked at run time).
    A module of such a package that defines only ``alternatives`` (another backend's builder)
    is not followed: its build is opt-in, it is scanned when the command line names it."""

    modules: Callable[[str], bool]
    packages: Callable[[str], bool] = _nothing
    defaults: Callable[[str], bool] = _nothing
    alternatives: Callable[[str], bool] = _nothing
    ops: Callable[[str], bool] = _nothing  # op modules a backend module imports
    # model modules: the bases their classes import from the same package are read too (the
    # mixin whose setter installs a model's per-step hook)
    models: Callable[[str], bool] = _nothing


def build_index(
    paths: list[str],
    budget: FileBudget = FileBudget(),
    follow: Follow | None = None,
) -> SourceIndex:
    """Parse and index ``paths``, and the modules ``follow`` adds from the same tree."""
    index = SourceIndex()
    seen: set[Path] = set()
    named = {index.folders.real(Path(p)) for p in paths if not Path(p).is_dir()}
    for path, display in collect_files(paths, index.folders):
        real = index.folders.real(path)  # never raises, also on a symlink loop
        if real in seen:
            continue
        seen.add(real)
        module = _parse(path, display, index, budget)
        if module is not None:
            module.named = real in named
            index.modules.append(module)
            index.lines += len(module.lines)
    _rebase(index)
    if follow is not None:
        _follow_imports(index, seen, budget, follow)
        index.load_op = _op_loader(index, seen, budget, follow)
    for module in index.modules:
        _index_module(module, index)
    for cls in index.classes:
        for base in cls.node.bases:
            name = dotted(base)
            resolved = index.resolve_class(cls.module, name) if name else None
            if resolved is not None and resolved is not cls:
                cls.bases.append(resolved)
    return index


def _parse(path: Path, display: str, index: SourceIndex, budget: FileBudget) -> SourceModule | None:
    started = time.monotonic()
    try:
        data = read_regular(path, budget.max_bytes)  # a FIFO named *.py must not block the scan
    except TooLarge:
        index.skipped.append(Problem(display, f"larger than {budget.max_bytes} bytes "
                                              "(--max-file-bytes)"))
        return None
    except OSError as exc:
        index.problems.append(Problem(display, f"cannot be read ({exc.strerror})"))
        return None
    if b"\0" in data:
        index.skipped.append(Problem(display, "binary file"))
        return None
    try:
        text = data.decode("utf-8-sig")  # Python accepts a leading BOM, so does the scan
    except UnicodeDecodeError:
        index.skipped.append(Problem(display, "not UTF-8 text"))
        return None
    try:
        tree = ast.parse(text, filename=display)
    except SyntaxError as exc:
        index.problems.append(Problem(display, f"syntax error at line {exc.lineno}: {exc.msg}"))
        return None
    except (RecursionError, MemoryError):
        index.skipped.append(Problem(display, "nested too deeply to parse"))
        return None
    if _depth(tree) > budget.max_depth:
        index.skipped.append(Problem(display, f"syntax nested deeper than {budget.max_depth} "
                                              "levels (--max-file-depth)"))
        return None
    elapsed = time.monotonic() - started
    if elapsed > budget.max_seconds:
        index.skipped.append(Problem(display, f"took {elapsed:.1f} s to read and parse "
                                              f"(--max-file-seconds {budget.max_seconds:g})"))
        return None
    module = SourceModule(path, display, module_name(path, index.folders), tree,
                          python_lines(text))
    _read_imports(module)
    return module


def _read_imports(module: SourceModule) -> None:
    package = module.name if module.path.stem == "__init__" else module.name.rpartition(".")[0]
    module.imports.clear()
    for node in _imports(module.tree.body):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            for alias in node.names:
                module.imports[alias.asname or alias.name] = (base, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    module.imports[alias.asname] = (alias.name, "")


def _rebase(index: SourceIndex) -> None:
    """Full module names for a subtree whose parent packages lack ``__init__.py``.

    ``vllm_ascend/worker`` copied without ``vllm_ascend/__init__.py`` names its modules
    ``worker.*``, and allow rules written for ``vllm_ascend.worker.*`` would silently stop
    matching. The scanned files' own absolute imports (``from vllm_ascend.worker.x import``)
    tell the missing prefix; when they disagree the scan says so in one line.
    """
    imported: set[str] = set()
    for module in index.modules:
        for node in _imports(module.tree.body):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    groups: dict[str, list[SourceModule]] = {}
    for module in index.modules:
        if "." in module.name:
            top = module.name.split(".")[0]
            root = next((p for p in module.path.absolute().parents if p.name == top), None)
            groups.setdefault(str(root), []).append(module)
    # each imported name's trailing dotted parts -> what comes before them ('a.b.' of 'a.b.c.d'
    # for 'c.d'): the prefixes a module name takes in the imports
    before: dict[str, set[str]] = {}
    for name in imported:
        parts = name.split(".")
        for cut in range(1, len(parts)):
            before.setdefault(".".join(parts[cut:]), set()).add(".".join(parts[:cut]) + ".")
    for root, modules in groups.items():
        prefixes = {prefix for module in modules for prefix in before.get(module.name, ())}
        if len(prefixes) == 1:
            prefix = prefixes.pop()
            for module in modules:
                module.name = prefix + module.name
                _read_imports(module)
        elif prefixes:
            shown = ", ".join(sorted(p.rstrip(".") for p in prefixes))
            index.warnings.append(
                f"{root}: no __init__.py above it and its imports disagree on its package "
                f"({shown}); module names start at {Path(root).name}, so allow rules written "
                f"for the full names do not match"
            )


def _follow_imports(
    index: SourceIndex, seen: set[Path], budget: FileBudget, follow: Follow
) -> None:
    """Add the modules the scanned ones import (transitively) that ``follow`` names and that
    lie in the same tree: ``vllm/v1/worker`` brings ``vllm/v1/sample/sampler.py`` along, and
    an import from ``vllm.v1.attention.backends`` every backend module with a builder."""
    roots = _roots(index)
    cwd = Path.cwd()
    queue = list(index.modules)
    expanded: set[str] = set()
    for module in index.modules:  # the builders' side: a backend package's modules
        module.backend = bool(_package(module.name, follow.packages))

    def add(file: Path, name: str) -> SourceModule | None:
        found = _add_followed(index, seen, budget, file, name, cwd)
        if found is not None:
            queue.append(found)
        return found

    while queue:
        module = queue.pop()
        if module.backend:
            _read_nested_imports(module)  # an op imported where it is called
        if follow.models(module.name):
            own = module.name.split(".")[0]  # the bases from the model's own package
            for name in _base_modules(module, _everything):
                file = index.folders.module_file(roots[own], name) \
                    if own in roots and name.split(".")[0] == own else None
                if file is not None:
                    add(file, name)
        for base, attr in module.imports.values():
            for name in (f"{base}.{attr}" if attr else base, base):
                root = roots.get(name.split(".")[0])
                if root is None:
                    continue
                package = _package(name, follow.packages)
                if package and package not in expanded:
                    expanded.add(package)
                    folder = root.joinpath(*package.split("."))
                    for file in sorted(folder.rglob("*.py")) if folder.is_dir() else []:
                        if _defines(file, follow.defaults, budget.max_bytes):
                            parts = file.relative_to(folder).with_suffix("").parts
                            added = add(file, ".".join([package, *parts]).removesuffix(".__init__"))
                            if added is not None:
                                added.backend = True
                            for base in _base_modules(added, follow.defaults):
                                found = index.folders.module_file(root, base)
                                based = add(found, base) if found is not None else None
                                if based is not None:  # MLA builders' common build lives there
                                    based.backend = True
                if not follow.modules(name):
                    continue
                file = index.folders.module_file(root, name)
                if file is None or (package and not _picks_backend(module)
                                    and _defines(file, follow.alternatives, budget.max_bytes)
                                    and not _defines(file, follow.defaults, budget.max_bytes)):
                    continue  # another backend's builder: opt-in, scanned when named
                add(file, name)


def _add_followed(index: SourceIndex, seen: set[Path], budget: FileBudget, file: Path, name: str,
                  cwd: Path) -> SourceModule | None:
    """Parse ``file`` (once: ``seen`` holds real paths) as module ``name``, reached by following
    imports, and add it to ``index``; None when it was seen or cannot be read."""
    real = index.folders.real(file)
    if real in seen:
        return None
    seen.add(real)
    found = _parse(file, _display(file, cwd, index.folders), index, budget)
    if found is not None:
        # the name it was imported by, whatever __init__.py files the tree lacks
        found.name = name
        _read_imports(found)
        found.followed = True
        index.modules.append(found)
        index.lines += len(found.lines)
    return found


def _read_nested_imports(module: SourceModule) -> None:
    """Add the ``from M import f`` statements inside functions to ``module.imports`` (a
    module-level binding of the same name wins): builders import their ops where they call
    them. Read only for the builders' side, whose ops the scan follows."""
    if not any(line[:1].isspace() and line.lstrip().startswith("from ")
               for line in module.lines):
        return
    package = module.name if module.path.stem == "__init__" else module.name.rpartition(".")[0]
    stack: list[ast.stmt] = list(module.tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(node.body)
        elif isinstance(node, ast.If | ast.Try | ast.For | ast.While | ast.With):
            for block in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                          *(h.body for h in getattr(node, "handlers", []))):
                stack.extend(block)
        elif isinstance(node, ast.ImportFrom) and node.col_offset:
            base = _absolute(node, package)
            for alias in node.names:
                module.imports.setdefault(alias.asname or alias.name, (base, alias.name))


def _roots(index: SourceIndex) -> dict[str, Path]:
    """Top-level package name -> the folder holding it, from the scanned modules."""
    roots: dict[str, Path] = {}
    for module in index.modules:
        depth = module.name.count(".") + (module.path.stem == "__init__")
        parents = index.folders.real(module.path).parents
        if depth < len(parents):
            roots.setdefault(module.name.split(".")[0], parents[depth])
    return roots


def _methods_by_name(classes: Iterable[ClassInfo]) -> dict[str, list[FunctionInfo]]:
    """The methods of ``classes`` by name, in class order."""
    found: dict[str, list[FunctionInfo]] = {}
    for cls in classes:
        for name, function in cls.methods.items():
            found.setdefault(name, []).append(function)
    return found


def _op_loader(index: SourceIndex, seen: set[Path], budget: FileBudget,
               follow: Follow) -> Callable[[str], SourceModule | None]:
    """Parse an op module ``follow.ops`` names, from the same tree, when a backend module's
    call first reaches one of its functions: an ops package is never read whole, and the ops of
    a builder the search does not reach are not read at all."""
    roots, cwd = _roots(index), Path.cwd()

    def load(name: str) -> SourceModule | None:
        root = roots.get(name.split(".")[0])
        file = index.folders.module_file(root, name) if root is not None and follow.ops(name) else None
        found = _add_followed(index, seen, budget, file, name, cwd) if file is not None else None
        if found is None:
            return None
        found.backend = True
        _read_nested_imports(found)
        _index_module(found, index)
        index._by_module, index._by_name = {}, {}  # resolve_class rebuilds its tables
        return found

    return load


def _picks_backend(module: SourceModule) -> bool:
    """A layer that picks its own attention backend (``def get_attn_backend(self)``): the
    backend modules it imports are its model family's default, not opt-in alternatives."""
    return any(isinstance(node, ast.ClassDef) and any(
        isinstance(item, ast.FunctionDef) and item.name == "get_attn_backend"
        for item in node.body) for node in module.tree.body)


def _base_modules(module: SourceModule | None, wanted: Callable[[str], bool]) -> list[str]:
    """The modules the bases of ``module``'s ``wanted`` classes are imported from: a default
    builder's build is often its base's (``MLACommonMetadataBuilder`` in another package)."""
    if module is None:
        return []
    names = []
    for node in module.tree.body:
        if isinstance(node, ast.ClassDef) and wanted(node.name):
            for base in node.bases:
                target = module.imports.get(dotted(base).partition(".")[0])
                if target is not None and target[1] and target[0] not in names:
                    names.append(target[0])
    return names


def _package(name: str, wanted: Callable[[str], bool]) -> str:
    """The enclosing package of ``name`` that ``wanted`` names, else ``""``."""
    parts = name.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)
                 if wanted(".".join(parts[:n]))), "")


_CLASS_LINE = re.compile(r"^class\s+(\w+)\s*(?:\(([^)]*)\))?", re.M)


def _class_lines(text: str) -> Iterator[re.Match[str]]:
    """``_CLASS_LINE.finditer(text)``, trying only the lines that start with ``class`` (sre
    tries a ``^`` of re.M at every position: most of a package's time to read its classes)."""
    at = 0
    while True:
        if not text.startswith("class", at):
            at = text.find("\nclass", at) + 1
            if not at:
                return
        match = _CLASS_LINE.match(text, at)
        if match is None:
            at += 1
        else:
            yield match
            at = match.end()


def _defines(file: Path, wanted: Callable[[str], bool], limit: int) -> bool:
    """Whether a module defines a class ``wanted`` names (by its name or a base's), read as
    text: a package's other modules are not parsed at all."""
    try:
        text = read_regular(file, limit).decode("utf-8", "replace")
    except (OSError, TooLarge):
        return False
    for match in _class_lines(text):
        bases = [b.strip().partition("[")[0].rpartition(".")[2]
                 for b in (match.group(2) or "").split(",")]
        if wanted(match.group(1)) or any(wanted(b) for b in bases if b):
            return True
    return False


_SCALAR_TYPES = frozenset({"identifier", "int", "string", "constant"})
_SIGNATURE_FIELD = re.compile(r"(\w+)[*?]? (\w+)")
# node class -> its fields that can hold nodes: with the ``ctx`` marker (for the depth), and
# without it (the walks: no consumer asks for Load/Store/Del)
_NODE_FIELDS: dict[type, tuple[str, ...]] = {}
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
# 1 for a class without such fields (a Constant), 2 with only a ``ctx`` (a Name): the depth
# counts them where it finds them instead of visiting them
_LEAF_HEIGHT: dict[type, int] = {}


def _learn_fields(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` that can hold nodes, from its ASDL signature (its docstring,
    ``Name(identifier id, expr_context ctx)``): names, numbers and strings are never read.
    A class whose signature does not read that way keeps all its fields."""
    kinds = {name: kind for kind, name in
             _SIGNATURE_FIELD.findall((cls.__doc__ or "").partition("(")[2])}
    fields = tuple(name for name in getattr(cls, "_fields", ())
                   if kinds.get(name) not in _SCALAR_TYPES)
    _NODE_FIELDS[cls] = fields
    _CHILD_FIELDS[cls] = tuple(name for name in fields if name != "ctx")
    _LEAF_HEIGHT[cls] = 1 if not fields else 2 if fields == ("ctx",) else 0
    return fields


def child_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that can hold child nodes, the ``ctx`` marker aside: what a
    hot walk reads instead of every name in ``_fields``."""
    found = _CHILD_FIELDS.get(cls)
    if found is None:
        _learn_fields(cls)
        found = _CHILD_FIELDS[cls]
    return found


def walk(tree: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk``'s nodes in its order (breadth first) but for the ``ctx`` markers, without
    its per-node generators and reading only the fields that can hold nodes: the locals of
    every reached function are found by walking it. A function's nodes are listed once and
    kept on it: its locals, its calls and its conditions are each looked for by a walk."""
    if type(tree) in _FUNCTIONS:
        nodes = getattr(tree, "_syncgate_nodes", None)
        if nodes is None:
            nodes = tree._syncgate_nodes = _nodes(tree)  # type: ignore[attr-defined]
        return iter(nodes)
    return iter(_nodes(tree))


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _nodes(tree: ast.AST) -> list[ast.AST]:
    nodes = [tree]
    push, node_type, table = nodes.append, ast.AST, _CHILD_FIELDS
    for node in nodes:  # a queue: what is pushed is visited after the nodes before it
        fields = table.get(type(node))
        if fields is None:
            fields = child_fields(type(node))
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        push(item)
            elif isinstance(value, node_type):
                push(value)
    return nodes


def _depth(tree: ast.AST) -> int:
    """The deepest nesting of ``tree`` (a context marker counts as a level), walked without
    recursion. It touches every node of every file: only the fields that can hold nodes are
    read, and leaves (names, constants) are counted where they are found, not visited."""
    deepest, stack = 0, [(tree, 1)]
    pop, push, node_type, table, leaves = stack.pop, stack.append, ast.AST, _NODE_FIELDS, _LEAF_HEIGHT
    while stack:
        node, depth = pop()
        if depth > deepest:
            deepest = depth
        below = depth + 1
        fields = table.get(type(node))
        if fields is None:
            fields = _learn_fields(type(node))
        for name in fields:
            value = getattr(node, name, None)
            for item in value if type(value) is list else (value,):
                height = leaves.get(type(item))
                if height:
                    if below + height - 1 > deepest:
                        deepest = below + height - 1
                elif isinstance(item, node_type):
                    push((item, below))
    return deepest


def conditional_statements(body: list[ast.stmt], kinds: tuple[type, ...], *,
                           handlers: bool) -> list[ast.stmt]:
    """Statements of ``kinds`` in ``body``, also those under ``if ...:`` and ``try:`` blocks (and
    their ``except`` handlers when ``handlers``), in source order."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, kinds):
            found.append(node)
        elif isinstance(node, ast.If | ast.Try):
            blocks = [node.body, node.orelse, getattr(node, "finalbody", [])]
            if handlers:
                blocks += [h.body for h in getattr(node, "handlers", [])]
            for block in blocks:
                found.extend(conditional_statements(block, kinds, handlers=handlers))
    return found


def _imports(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level imports, also those under ``if TYPE_CHECKING:`` and ``try:``."""
    return conditional_statements(body, (ast.Import, ast.ImportFrom), handlers=True)


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _index_module(module: SourceModule, index: SourceIndex) -> None:
    for node in module.tree.body:
        if isinstance(node, ast.ClassDef):
            cls = ClassInfo(node.name, module, node)
            for item in _class_functions(node.body):
                if item.name in cls.methods and item not in node.body:
                    continue  # a version-specific alternative of a method already seen
                cls.methods[item.name] = FunctionInfo(
                    item.name, f"{node.name}.{item.name}", module, item, cls
                )
            index.classes.append(cls)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            index.functions[(module.name, node.name)] = FunctionInfo(
                node.name, node.name, module, node
            )


def is_record(node: ast.ClassDef) -> bool:
    """A NamedTuple or a dataclass: a container of named fields."""
    bases = {dotted(b).rpartition(".")[2] for b in node.bases}
    decorators = {dotted(d.func if isinstance(d, ast.Call) else d).rpartition(".")[2]
                  for d in node.decorator_list}
    return "NamedTuple" in bases or "dataclass" in decorators


def _class_functions(body: list[ast.stmt]) -> list[FunctionNode]:
    """Methods of a class body, also those under a class-level ``if vllm_version_is(...):`` or
    ``try:`` (vllm-ascend defines version-specific methods that way): a plain redefinition
    replaces a method as in Python, of conditional alternatives the first one is taken."""
    methods = conditional_statements(body, (ast.FunctionDef, ast.AsyncFunctionDef), handlers=False)
    return cast(list[FunctionNode], methods)


def class_mro(cls: ClassInfo) -> list[ClassInfo]:
    """Depth-first, left-to-right, duplicates after their first occurrence removed.

    Close enough to C3 for runner hierarchies (single inheritance plus mixins).
    """
    order: list[ClassInfo] = []
    stack = [cls]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        order.append(current)
        stack.extend(reversed(current.bases))
    return order


def is_self_attribute(node: ast.AST | None) -> bool:
    """``self.x``: a read or store of one of the object's own attributes."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
        node.value.id == "self"


def dotted(node: ast.expr) -> str:
    """``a.b.c`` for a Name/Attribute chain (``Generic[T]`` gives ``Generic``), else ``""``."""
    parts: list[str] = []
    while True:  # a loop, not a recursion: asked ~100k times a scan
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts)) if len(parts) > 1 else node.id
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
        elif not isinstance(node, ast.Subscript):
            return ""
        node = node.value

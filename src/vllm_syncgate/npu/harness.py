"""Run named methods of vllm-ascend's V2 ``NPUModelRunner`` without an NPU.

Two ways to get the methods, one result: a class whose own methods are the upstream ones and
whose parent is a simulated stand-in for vLLM's ``GPUModelRunner`` (so ``super()`` calls land on
simulated device work), instantiated without ``__init__`` and given its state explicitly.

- ``ast`` mode (anywhere): the runner module is parsed, never imported; the named function defs
  are compiled, with their original file name and line numbers, inside a fresh class body. Only
  ``torch`` and ``numpy`` are offered as globals, with a short list of harmless builtins
  (:data:`SAFE_BUILTINS`: no ``open``, ``__import__``, ``eval``, ``exec``, ``compile``), and a
  method that needs anything else, or touches a dunder attribute (``().__class__.__mro__``), is
  refused before it is compiled, so ``vllm_ascend``, ``vllm`` and ``torch_npu`` are never imported.
  ``torch`` and ``numpy`` themselves can still reach the host (``torch.load``): running a tree's
  methods is trusting the tree, which ``syncgate check`` asks for with ``--trust-source``.
- ``import`` mode (inside the NPU image, where ``vllm_ascend`` imports): the real class is used and
  the simulated parent is spliced into its MRO right below it.

Upstream keeps ``torch.cuda`` mapped to ``torch.npu`` after its runner is built
(``torch_cuda_wrapper``); :func:`cuda_mapped_to_npu` does the same for the duration of a run.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import importlib
import importlib.util
import re
import symtable
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vllm_syncgate.errors import EnvironmentProblem, SimulatorError, UnsupportedLayoutError

RUNNER_MODULE = "vllm_ascend.worker.v2.model_runner"
RUNNER_CLASS = "NPUModelRunner"
# The methods vllm-ascend #13382 changed: the copy after sampling and the wait before the next step.
SEQ_LENS_METHODS = ("postprocess_sampled", "_copy_num_computed_tokens_to_cpu", "_update_seq_lens_cpu")
MODES = ("ast", "import")
# The globals a loaded method may use; the simulated accelerator patches torch in place.
_NAMESPACE: dict[str, Any] = {"torch": torch, "np": np, "numpy": np}
# What upstream's torch_cuda_wrapper redirects from torch.cuda to torch.npu.
# The builtins a loaded method may use: values and containers, no I/O, no import, no introspection.
SAFE_BUILTINS = (
    "abs", "all", "any", "bool", "dict", "enumerate", "float", "int", "isinstance", "len", "list",
    "max", "min", "range", "reversed", "set", "slice", "sorted", "str", "sum", "super", "tuple",
    "zip", "None", "True", "False", "AssertionError", "IndexError", "KeyError",
    "NotImplementedError", "RuntimeError", "TypeError", "ValueError",
)
_CUDA_NAMES = (
    "Event", "Stream", "current_stream", "default_stream", "stream", "set_stream", "synchronize",
)
_ABSENT = object()


@dataclass(frozen=True)
class AscendSource:
    """A vllm-ascend source tree (sdist or checkout) and the version it declares."""

    root: Path
    version: str

    @classmethod
    def at(cls, root: str | Path) -> AscendSource:
        path = Path(root).expanduser()
        if not (path / "vllm_ascend").is_dir():
            raise UnsupportedLayoutError(
                f"unsupported vllm-ascend layout: no vllm_ascend/ package under {path}"
                " (version unknown)"
            )
        return cls(root=path, version=source_version(path))

    def module_file(self, module: str = RUNNER_MODULE) -> Path:
        return self.root.joinpath(*module.split(".")).with_suffix(".py")

    def missing(self, what: str) -> UnsupportedLayoutError:
        return UnsupportedLayoutError(
            f"unsupported vllm-ascend layout: {what} (version {self.version})"
        )


def source_version(root: Path) -> str:
    """The version an sdist (``PKG-INFO``) or an installed checkout (``_version.py``) declares."""
    pkg_info = root / "PKG-INFO"
    patterns = (
        (pkg_info, r"^Version:\s*(\S+)"),
        (root / "vllm_ascend" / "_version.py", r"^__version__\s*=\s*version\s*=\s*['\"]([^'\"]+)"),
        (root / "vllm_ascend" / "_version.py", r"^__version__\s*=\s*['\"]([^'\"]+)"),
    )
    for path, pattern in patterns:
        if path.is_file():
            found = re.search(pattern, path.read_text(encoding="utf-8", errors="replace"), re.M)
            if found:
                return found.group(1)
    return "unknown"


def load_runner_class(
    source: AscendSource,
    parent: type,
    methods: Iterable[str] = SEQ_LENS_METHODS,
    *,
    mode: str = "ast",
    class_name: str = RUNNER_CLASS,
    module: str = RUNNER_MODULE,
) -> type:
    """A class with ``class_name``'s named methods from ``source`` over the simulated ``parent``."""
    wanted = tuple(methods)
    if mode == "ast":
        return _compile_methods(source, parent, wanted, class_name, module)
    if mode == "import":
        return _splice_real_class(source, parent, wanted, class_name, module)
    raise ValueError(f"mode must be one of {MODES}, not {mode!r}")


def importable_from(source: AscendSource) -> bool:
    """Whether ``import vllm_ascend`` would load this very tree (the NPU image's case)."""
    spec = importlib.util.find_spec("vllm_ascend")
    if spec is None or spec.origin is None:
        return False
    return Path(spec.origin).resolve().is_relative_to((source.root / "vllm_ascend").resolve())


def bind(cls: type, state: dict[str, Any]) -> Any:
    """An instance of ``cls`` that skipped ``__init__`` and holds exactly ``state``."""
    runner = cls.__new__(cls)
    for name, value in state.items():
        object.__setattr__(runner, name, value)
    return runner


@contextlib.contextmanager
def cuda_mapped_to_npu() -> Iterator[None]:
    """``torch.cuda.X`` is ``torch.npu.X`` inside, as upstream's runner leaves it; then restored."""
    npu = getattr(torch, "npu", None)
    if npu is None:
        raise SimulatorError("torch.npu is missing: enter simulated_accelerator('npu') first")
    saved = {name: torch.cuda.__dict__.get(name, _ABSENT) for name in _CUDA_NAMES}
    try:
        for name in _CUDA_NAMES:
            setattr(torch.cuda, name, getattr(npu, name))
        yield
    finally:
        for name, value in saved.items():
            if value is _ABSENT:
                delattr(torch.cuda, name)
            else:
                setattr(torch.cuda, name, value)


# --- ast mode --------------------------------------------------------------------------------
def _compile_methods(
    source: AscendSource, parent: type, wanted: tuple[str, ...], class_name: str, module: str
) -> type:
    path = source.module_file(module)
    if not path.is_file():
        raise source.missing(f"no {path.relative_to(source.root)}")
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise source.missing(f"{path.name} does not parse (line {exc.lineno})") from exc
    klass = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None
    )
    if klass is None:
        raise source.missing(f"no class {class_name} in {module}")
    defs = _method_defs(klass)
    absent = [name for name in wanted if name not in defs]
    if absent:
        raise source.missing(f"{class_name} has no method {', '.join(absent)}")
    body = [_without_annotations(defs[name]) for name in wanted]
    shell = ast.Module(
        body=[ast.ClassDef(
            name=class_name, bases=[ast.Name(id="_SyncgateParent", ctx=ast.Load())],
            keywords=[], body=body, decorator_list=[], type_params=[],
        )],
        type_ignores=[],
    )
    ast.fix_missing_locations(shell)
    _check_free_names(shell, path, class_name, source)
    _check_no_dunders(shell, class_name, source)
    namespace: dict[str, Any] = {
        **_NAMESPACE, "_SyncgateParent": parent, "__name__": module, "__file__": str(path),
        "__builtins__": {name: getattr(builtins, name) for name in SAFE_BUILTINS}
        | {"__build_class__": builtins.__build_class__},  # what a class statement calls
    }
    exec(compile(shell, str(path), "exec"), namespace)
    cls: type = namespace[class_name]
    cls.__syncgate_source__ = source  # type: ignore[attr-defined]
    return cls


def _method_defs(klass: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    """Function defs of a class body, also under a version ``if`` (the last one wins, as at run)."""
    found: dict[str, ast.FunctionDef] = {}
    pending: list[ast.stmt] = list(klass.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.If):
            pending[:0] = node.body + node.orelse
    return found


def _without_annotations(fn: ast.FunctionDef) -> ast.FunctionDef:
    """Annotations name vllm types the harness does not import; they do not affect behaviour."""
    clone = copy.deepcopy(fn)  # keeps line numbers, so tracebacks and call sites match the file
    args = clone.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None:
            arg.annotation = None
    clone.returns = None
    return clone


def _check_free_names(
    shell: ast.Module, path: Path, class_name: str, source: AscendSource
) -> None:
    table = symtable.symtable(ast.unparse(shell), str(path), "exec")
    provided = set(_NAMESPACE) | set(SAFE_BUILTINS) | {"_SyncgateParent"}

    def unknown(symbols: Iterable[symtable.Symbol]) -> list[str]:
        return sorted({
            s.get_name() for s in symbols
            if s.is_global() and s.is_referenced() and s.get_name() not in provided
        })

    for klass in table.get_children():
        scopes = [(f"{class_name} (decorators)", klass.get_symbols())]
        scopes += [
            (f"{class_name}.{fn.get_name()}", _all_symbols(fn)) for fn in klass.get_children()
        ]
        for where, symbols in scopes:
            missing = unknown(symbols)
            if missing:
                raise source.missing(
                    f"{where} uses names the harness cannot provide: {', '.join(missing)}"
                )


def _check_no_dunders(shell: ast.Module, class_name: str, source: AscendSource) -> None:
    """Refuse ``x.__class__`` and friends: the way out of a restricted namespace."""
    for node in ast.walk(shell):
        name = node.attr if isinstance(node, ast.Attribute) else (
            node.id if isinstance(node, ast.Name) else None)
        if name is not None and name.startswith("__") and name.endswith("__"):
            raise source.missing(f"{class_name} touches {name} (line {getattr(node, 'lineno', '?')}),"
                                 " which the harness does not run")


def _all_symbols(table: symtable.SymbolTable) -> list[symtable.Symbol]:
    symbols = list(table.get_symbols())
    for child in table.get_children():
        symbols.extend(_all_symbols(child))
    return symbols


# --- import mode -----------------------------------------------------------------------------
def _splice_real_class(
    source: AscendSource, parent: type, wanted: tuple[str, ...], class_name: str, module: str
) -> type:
    if not importable_from(source):
        raise EnvironmentProblem(
            f"vllm_ascend is not importable from {source.root}; use mode='ast' here"
        )
    real = getattr(importlib.import_module(module), class_name, None)
    if not isinstance(real, type):
        raise source.missing(f"no class {class_name} in {module}")
    absent = [name for name in wanted if name not in vars(real)]
    if absent:
        raise source.missing(f"{class_name} has no method {', '.join(absent)}")
    # Real -> simulated parent -> vLLM's GPUModelRunner: super() in the real methods lands on the
    # simulation, and nothing else of the real parent is reachable from the methods under test.
    grafted = type(f"Simulated{real.__base__.__name__}", (parent, real.__base__), {})
    return type(class_name, (real, grafted), {"__syncgate_source__": source})

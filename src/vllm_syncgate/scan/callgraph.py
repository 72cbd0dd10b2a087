"""The scan: index the sources, learn attribute facts, walk every function, search the call graph.

For each runner class (a class matching the entry-class patterns that has an entry method), the
call graph is followed from its entry methods through ``self.`` calls (resolved in that class's
MRO, so overrides win), ``super()`` calls, module functions and constructors of scanned classes.
Each sync site gets the weakest guard over all paths to it (a path is as guarded as its
strongest condition): one unguarded path is enough to put the sync on the protected loop.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from vllm_syncgate.audit.budgets import AllowRule
from vllm_syncgate.errors import ScanError
from vllm_syncgate.scan.cache import ScanCache, fingerprint
from vllm_syncgate.scan.config import ScanConfig, load_config
from vllm_syncgate.scan.guards import (
    Condition,
    Guard,
    GuardEvaluator,
    config_overrides,
    contradictory,
    environment_writes,
    parameter_none_tests,
    tree_config_sources,
)
from vllm_syncgate.scan.memory import paused_collector
from vllm_syncgate.scan.rules import (
    Assignment,
    Call,
    FunctionFacts,
    FunctionWalker,
    Site,
    element_class,
    explain,
    optional_int_annotated,
    param_annotation,
    strongest,
)
from vllm_syncgate.scan.sources import (
    ClassInfo,
    FileBudget,
    Follow,
    FunctionInfo,
    FunctionNode,
    Problem,
    SourceIndex,
    SourceModule,
    build_index,
    conditional_statements,
    dotted,
    is_record,
    is_self_attribute,
    walk,
)
from vllm_syncgate.scan.values import (
    Arguments,
    Facts,
    KeyedStores,
    Pin,
    Place,
    ValueModel,
    annotation_place,
    bindings,
    is_none,
    keyed_stores,
    keyword,
    member_sets,
    never_none,
    python_list,
    record_fields,
    self_slot,
    tensor_or_container_method,
)

Node = tuple[ClassInfo | None, FunctionInfo]
# devices whose tensors torch's ``__setitem__`` hands a Python number on the host (CUDA; the
# CPU's own): ``x[mask] = 0`` is a ``masked_fill_`` there (ScanConfig.host_scalar_fill)
_HOST_SCALAR_FILL = ("cuda", "cpu")


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    qualname: str
    kind: str
    api: str
    guard: str
    entry: str
    path: tuple[str, ...]
    runner: str
    symbol: str
    code: str
    conditions: tuple[str, ...] = ()
    reason: str = ""
    entry_symbol: str = ""  # module:Class.method: V1 and V2 runners share a class name
    why: str = ""  # why this kind of site blocks the host (rules.explain)
    upload: bool = False  # a host-to-device copy (its fix stages the data in pinned memory)

    @property
    def gates(self) -> bool:
        """True when this sync fails the gate (unguarded and not allow-listed)."""
        return self.guard == Guard.NONE.value

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "qualname": self.qualname,
            "kind": self.kind,
            "api": self.api,
            "guard": self.guard,
            "entry": self.entry,
            "path": list(self.path),
            "runner": self.runner,
            "symbol": self.symbol,
            "code": self.code,
            "conditions": list(self.conditions),
            "reason": self.reason,
            "entry_symbol": self.entry_symbol,
            "why": self.why,
            "upload": self.upload,
        }


@dataclass
class ScanResult:
    findings: list[Finding]
    files: int
    lines: int
    entries: list[str]
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # (file, qualname) of each function the default step reaches (calls weaker than opt-in: where
    # a sync fails the gate); check's unit level names those a branch changed that no probe ran
    reached: list[tuple[str, str]] = field(default_factory=list)

    @property
    def failing(self) -> list[Finding]:
        return [f for f in self.findings if f.gates]

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "findings": [f.to_json() for f in self.findings], "files": self.files,
            "lines": self.lines, "entries": self.entries,
            "problems": [asdict(p) for p in self.problems],
            "skipped": [asdict(p) for p in self.skipped], "warnings": self.warnings,
            "reached": [list(r) for r in self.reached],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScanResult:
        tuples = ("path", "conditions")
        return cls(
            findings=[Finding(**{k: tuple(v) if k in tuples else v for k, v in f.items()})
                      for f in data["findings"]],
            files=data["files"], lines=data["lines"], entries=data["entries"],
            problems=[Problem(**p) for p in data["problems"]],
            skipped=[Problem(**p) for p in data["skipped"]], warnings=data["warnings"],
            reached=[(file, qualname) for file, qualname in data["reached"]],
        )


def scan(
    paths: Sequence[str],
    entries: Sequence[str] = (),
    allow: Sequence[AllowRule] = (),
    config: ScanConfig | None = None,
    budget: FileBudget | None = None,
    cache_dir: Path | None = None,
    dispatch: Sequence[str] = (),
    device: str = "",
) -> ScanResult:
    """Scan ``paths``; ``entries`` (``Class.method`` or ``method``) replace the default entries
    (the runners' steps and the model forward's roots). ``dispatch`` is the budget's: which of
    an op class's per-platform methods the device runs. ``device`` (``cuda``, ``npu``, ``cpu``;
    "" when unknown) decides the rules whose blocking differs by device.

    With ``cache_dir``, an unchanged tree's result is read back instead (:mod:`.cache`).
    """
    config = config or load_config()
    if dispatch:
        config = replace(config, op_dispatch=tuple(dispatch))  # part of the cache key
    if device in _HOST_SCALAR_FILL:
        config = replace(config, host_scalar_fill=True)
    if not config.config_sources:  # the scanned release's own config defaults, if it has one
        config = replace(config, config_sources=tree_config_sources(paths))
    budget = budget or FileBudget()
    cache = None
    if cache_dir is not None:
        key = fingerprint(paths, entries, allow, config, budget)
        cache = ScanCache(cache_dir, key, paths, budget.max_bytes)
        cached = cache.load()
        if cached is not None:
            try:
                return ScanResult.from_json(cached)
            except (KeyError, TypeError):
                pass  # an entry of another shape: scan again and replace it
    with paused_collector():  # the AST nodes live as long as the scan: no collector rounds
        result, read = _scan(paths, entries, allow, config, budget)
    if cache is not None:
        cache.store(result.to_json(), read)
    return result


def _scan(
    paths: Sequence[str], entries: Sequence[str], allow: Sequence[AllowRule], config: ScanConfig,
    budget: FileBudget,
) -> tuple[ScanResult, list[Path]]:
    # of a backend package, only the modules with a default builder (and its helpers): the
    # other builders' builds are opt-in and cannot fail the gate (scanned when named)
    follow = Follow(config.follow_imports.match, config.follow_packages.match,
                    config.default_implementations.match, config.dispatch_classes.match,
                    config.follow_ops.match, config.model_modules.match)
    index = build_index(list(paths), budget, follow)
    if not index.modules:
        detail = (index.problems or index.skipped or [Problem(", ".join(paths), "no .py files")])[0]
        raise ScanError(f"nothing could be scanned: {detail.file}: {detail.reason}")
    hooks = [m.node for c in index.classes for m in c.methods.values()
             if config.config_hooks.match(m.name)]
    if hooks:  # a scanned platform's config hook: what it forces is the default it runs with
        config = replace(config, config_overrides=config_overrides(hooks))
    written = environment_writes(m.tree for m in index.modules
                                 if any("environ" in line or "putenv" in line for line in m.lines))
    if written:
        config = replace(config, environment_set=written)
    analysis = _Analysis(index, config)
    runners, warnings = _entry_points(index, config, entries)
    warnings = [*index.warnings, *warnings]
    # the model forward's per-step code: roots of their own unless --entry names the roots
    roots = [(r, ms, Guard.NONE) for r, ms in runners] + ([] if entries else analysis.forward_roots())
    if not roots:
        raise ScanError(
            "no entry point found in the scanned files" + (f" ({warnings[0]})" if warnings else "")
        )
    findings: list[Finding] = []
    reached: set[tuple[str, str]] = set()
    for root, methods, floor in roots:
        findings.extend(analysis.search(root, methods, allow, floor))
        if floor.rank < Guard.OPT_IN.rank:
            reached.update(analysis.reach(root, methods))
    findings.sort(key=lambda f: (f.runner, f.entry, f.file, f.line, f.api))
    result = ScanResult(
        findings=findings,
        files=len(index.modules),
        lines=index.lines,
        entries=[f"{r.symbol}.{m.name}" for r, ms, _ in roots for m in ms],
        problems=index.problems,
        skipped=index.skipped,
        warnings=warnings,
        reached=sorted(reached),
    )
    return result, [m.path for m in index.modules]


def _entry_points(
    index: SourceIndex, config: ScanConfig, requested: Sequence[str]
) -> tuple[list[tuple[ClassInfo, list[FunctionInfo]]], list[str]]:
    """(runner class, entry methods in order) pairs, and warnings for entries not found."""
    warnings: list[str] = []
    runners = [
        c for c in index.classes
        if config.entry_classes.match(c.name) and not config.skip_classes.match(c.name)
        and not c.module.followed
    ]
    wanted: list[tuple[str | None, str]] = []
    for spec in requested:
        cls_name, _, method = spec.rpartition(".")
        wanted.append((cls_name or None, method))
    if not wanted:
        wanted = [(None, m) for m in config.entry_methods]
    roots: dict[int, tuple[ClassInfo, list[FunctionInfo]]] = {}
    for cls_name, method in wanted:
        pool = runners if cls_name is None else [c for c in index.classes if c.name == cls_name]
        if cls_name is not None and not pool:
            near = difflib.get_close_matches(cls_name, sorted({c.name for c in index.classes}))
            warnings.append(f"entry {cls_name}.{method}: no class {cls_name}" + _nearest(near))
            continue
        hits = [(c, index.lookup(c, method)) for c in pool]
        found = [(c, f) for c, f in hits if f is not None]
        if not found and requested:
            names = sorted({m for c in pool for k in index.mro(c) for m in k.methods})
            near = difflib.get_close_matches(method, names)
            where = cls_name or "the runner classes"
            warnings.append(f"entry {where}.{method}: no such method" + _nearest(near))
        for cls, function in found:
            entry = roots.setdefault(id(cls), (cls, []))
            if function not in entry[1]:
                entry[1].append(function)
    return list(roots.values()), warnings


def _nearest(names: list[str]) -> str:
    return f"; nearest: {', '.join(names)}" if names else ""


class _Analysis:
    """Per-function facts (computed once) and the per-runner graph search."""

    def __init__(self, index: SourceIndex, config: ScanConfig) -> None:
        self.index = index
        self.config = config
        self._properties = frozenset(
            m.name for cls in index.classes for m in cls.methods.values() if _is_property(m.node))
        # (module, class name) -> classes a module-level patch puts in its place
        # (``vllm.v1.worker.gpu.buffer_utils.UvaBuffer = UvaBufferWrapper`` in a plugin)
        self._patches = _patched_classes(index)
        self._function_patches = _patched_functions(index)
        self._custom_ops = _custom_ops(index)
        # classes a run-time dispatch may land in (every attention metadata builder)
        self._implementations = [c for c in index.classes if self._implements(c)]
        # of those, the ones a model picks without any switch (a model family's own backend)
        self._defaults = {id(c) for c in self._implementations
                          if config.default_implementations.match(c.name)}
        self._defaults.update(id(c) for c in _layer_chosen(index))
        # pass 1: attribute facts from every ``self.x = ...`` in every method (no facts yet)
        learn = self._walker(Facts(), None)
        learn.values.records = True  # self.x = meta.seq_lens[:n]: a device record's field
        assignments: list[Assignment] = []
        owned: dict[tuple[int, str], list[Assignment]] = {}
        setters: dict[str, set[str]] = {}  # attr -> methods that store a value there
        int_stores: set[int] = set()  # assignments that store a Python int
        # (class, attr) -> classes of the objects ``self.attr = Class(...)`` stores there
        self._attr_types: dict[tuple[int, str], list[ClassInfo]] = {}
        # (class, attr) -> methods ``self.attr = self.method`` binds there (forward_native)
        self._aliases: dict[tuple[int, str], list[str]] = {}
        # (class, attr) holding a model a factory built (``self.talker =
        # init_vllm_registered_model(...)``): calls on it land in the scanned model classes
        self._model_slots: set[tuple[int, str]] = set()
        # (class, attr) of such a slot -> the architectures its factory calls name
        # (``architectures=["Qwen3OmniMoeCode2Wav"]``); "" for a call that names none
        self._slot_architectures: dict[tuple[int, str], set[str]] = {}
        # (class, attr) -> every factory call filling it builds from a text config
        self._text_slots: dict[tuple[int, str], bool] = {}
        # (class, attr) -> the model's method fetched into it by name
        self._model_methods: dict[tuple[int, str], str] = {}
        # class -> (attr, name) of ``self.attr = name`` in its ``__init__`` (typed below by what
        # its constructions pass); (class, call, classes built) of each ``self.x = Class(...)``
        parameters: dict[int, list[tuple[str, str]]] = {}
        constructions: list[tuple[ClassInfo, ast.Call, list[ClassInfo]]] = []
        for cls in index.classes:
            for method in cls.methods.values():
                for assignment in learn.walk(method.node, sites=False).assignments:
                    assignments.append(assignment)
                    if _int_store(method, assignment.value):
                        int_stores.add(id(assignment))
                    owned.setdefault((id(cls), assignment.attr), []).append(assignment)
                    # a constructor is "called" as its class: AsyncOutput(...) builds it
                    setter = f"{cls.name}()" if method.name == "__init__" else method.name
                    setters.setdefault(assignment.attr, set()).add(setter)
                    if assignment.alias:
                        self._aliases.setdefault((id(cls), assignment.attr), []).append(
                            assignment.alias)
                    if config.model_factories.match(assignment.made_by.rpartition(".")[2]):
                        self._model_slots.add((id(cls), assignment.attr))
                        named = self._slot_architectures.setdefault((id(cls), assignment.attr),
                                                                    set())
                        named.update(_architectures(assignment.value))
                        key = (id(cls), assignment.attr)
                        self._text_slots[key] = self._text_slots.get(key, True) and \
                            _text_config(config, assignment.value)
                    fetched = _model_method(config, _local_value(method, assignment.value))
                    if fetched:  # self.talker_mtp = getattr(self.model, "talker_mtp", None)
                        self._model_methods.setdefault((id(cls), assignment.attr), fetched)
                    built = self._made_by(cls.module, assignment.made_by, cls) or \
                        self._declared(cls.module, assignment.annotated, cls)
                    if built and isinstance(assignment.value, ast.Call):
                        constructions.append((cls, assignment.value, built))
                    elif method.name == "__init__" and isinstance(assignment.value, ast.Name):
                        parameters.setdefault(id(cls), []).append(
                            (assignment.attr, assignment.value.id))
                    for made in built:
                        types = self._attr_types.setdefault((id(cls), assignment.attr), [])
                        if made not in types:
                            types.append(made)
        self._type_stored_parameters(parameters, constructions)
        # the classes of the model the loader builds, and the layer sampler a V0 model's
        # ``sample`` runs: where a runner's ``self.model.method()`` may land
        self._models = [c for c in index.classes if config.model_modules.match(c.module.name)
                        and any(config.model_interface.match(m)
                                for k in index.mro(c) for m in k.methods)]
        self._samplers = [c for c in index.classes if config.sampler_classes.match(c.name)]
        # (class, attr) -> methods a setter installs there: ``self.set_hook(self.method)``
        self._model_ids = {id(c) for c in self._models}
        self._installed = _installed_methods(index, self._models)
        settled = _settle_copies(index, config, owned)
        if settled:
            owned = {k: [settled.get(id(a), a) for a in g] for k, g in owned.items()}
            assignments = [settled.get(id(a), a) for a in assignments]
        # pass 2, on demand: sites and calls of the functions the search reaches
        facts = _attribute_facts(assignments)
        facts.annotated = _annotated_fields(index)
        facts.model_attrs = frozenset(attr for _owner, attr in self._model_slots)
        classes = {id(cls): cls for cls in index.classes}
        for key, group in owned.items():
            # the nearest class that sets the attribute decides (values.owned): both tables
            # hold an answer for every class that sets it
            facts.collections[key] = all(_list_valued(index, classes[key[0]], a.value)
                                         for a in group)
            # self.chunked_prefill_enabled = False, never anything else: hard-wired off
            facts.hard_off[key] = all(isinstance(a.value, ast.Constant) and a.value.value is False
                                      for a in group)
            facts.ints[key] = all(id(a) in int_stores for a in group)
            pins = {a.pin for a in group} - {Pin.UNKNOWN}
            if len(pins) == 1:
                facts.owner_pin[key] = pins.pop()
            dtypes = {a.dtype for a in group}
            if len(dtypes) == 1 and None not in dtypes:
                facts.owner_dtype[key] = dtypes.pop()  # type: ignore[assignment]
            places = {a.place for a in group}
            if len(places) == 1 and Place.UNKNOWN not in places:
                facts.owner_place[key] = places.pop()
        for (_owner, attr), made in self._attr_types.items():
            if len(made) == 1 and is_record(made[0].node):
                facts.fields[attr] = record_fields(made[0].node)
        self._setter_presence(facts, setters)
        # one memo of helpers' return values for the walks and the call-site judgements
        returns = _ReturnPlaces(index, config, facts)
        facts.stored = _StoredFields(index, config, facts, returns)
        self._walker_with_facts = self._walker(facts, returns)
        self._arguments = ValueModel(config, facts, returns)
        self._facts: dict[int, FunctionFacts] = {}
        self._edge_cache: dict[tuple[int, int], list[tuple[Node, Guard]]] = {}
        # (module, maker, class) -> the classes a local's maker builds (``_local_calls``)
        self._local_types: dict[tuple[int, str, int], list[ClassInfo]] = {}

    def forward_roots(self) -> list[tuple[ClassInfo, list[FunctionInfo], Guard]]:
        """The model forward's per-step code, each class with the methods a step runs and the
        guard it starts under: the impls of the attention backends (opt-in unless the backend's
        builder is a default, or it has none and its file is named on the command line), op
        classes (the budget's dispatch), model layers that pick their backend, and classes whose
        methods a plugin installs on a model class."""
        config, index = self.config, self.index
        roots: dict[int, tuple[ClassInfo, list[FunctionInfo], Guard]] = {}

        def add(cls: ClassInfo, functions: list[FunctionInfo], guard: Guard) -> None:
            if config.entry_classes.match(cls.name) or not functions:
                return  # a runner is a root of its own
            for function in functions:  # the kernels' wrappers it imports are read when reached
                function.module.backend = True
            known = roots.get(id(cls))
            if known is None:
                roots[id(cls)] = (cls, list(dict.fromkeys(functions)), guard)
                return
            merged = list(dict.fromkeys([*known[1], *functions]))
            roots[id(cls)] = (cls, merged, min(known[2], guard, key=lambda g: g.rank))

        for backend in index.classes:
            impls = _returned_classes(index, backend, "get_impl_cls")
            if impls:
                builders = _returned_classes(index, backend, "get_builder_cls")
                # a V0 backend has no builder to say whether it is a default (the runner builds
                # its metadata): named on the command line as a file, it is the one in use
                default = any(id(b) in self._defaults for b in builders) \
                    or (not builders and backend.module.named)
                for impl in impls:
                    add(impl, self._forward_methods(impl), Guard.NONE if default else Guard.OPT_IN)
        for cls in index.classes:
            # an op, a model layer, a plugin's subclass of a model layer it registers instead
            if self._is_op(cls) or "get_attn_backend" in cls.methods or self._layer_override(cls):
                add(cls, self._forward_methods(cls), Guard.NONE)
        for cls, method in _patched_methods(index, config):
            add(cls, [method], Guard.NONE)
        for classes in self._patches.values():
            for cls in classes:
                if self.index.lookup(cls, "forward") is not None:
                    add(cls, self._forward_methods(cls), Guard.NONE)
        return list(roots.values())

    def _layer_override(self, cls: ClassInfo) -> bool:
        """A subclass of a model layer the scan does not read (a base imported from a module
        ``[entries] layer_modules`` names): a plugin registers it in the layer's place
        (``REGISTERED_ASCEND_OPS``), so the model's forward runs its overrides."""
        for base in cls.node.bases:
            imported = cls.module.imports.get(dotted(base).partition(".")[0])
            if imported is not None and self.config.layer_modules.match(imported[0]) \
                    and self.index.resolve_class(cls.module, dotted(base)) is None:
                return True
        return False

    def _is_op(self, cls: ClassInfo) -> bool:
        """A CustomOp subclass: it or a scanned base defines a per-platform method, and none
        binds ``self.forward`` itself (a sampler op picking its method in ``__init__`` is
        followed through that binding, whatever the device)."""
        chain = self.index.mro(cls)
        return (any(self.config.op_methods.match(m) for k in chain for m in k.methods)
                and not any((id(k), "forward") in self._aliases for k in chain))

    def _forward_methods(self, cls: ClassInfo) -> list[FunctionInfo]:
        """What a call of ``cls``'s object runs: ``forward`` (an op's dispatched method too,
        the budget's first one ``cls`` defines), else its own ``_forward*`` helpers (the
        unscanned base's forward calls them)."""
        config, found = self.config, []
        forward = self.index.lookup(cls, "forward")
        if forward is not None:
            found.append(forward)
        if self._is_op(cls):
            dispatched = (self.index.lookup(cls, m) for m in config.op_dispatch)
            found.extend(next(([f] for f in dispatched if f is not None), []))
        if forward is None:
            found.extend(f for name, f in cls.methods.items() if config.forward_methods.match(name)
                         and not config.op_methods.match(name))
        return found

    def _setter_presence(self, facts: Facts, setters: dict[str, set[str]]) -> None:
        """An attribute stored only by a method that every caller calls in one mode only.

        ``InputBatch.sampled_token_ids_cpu`` is set by ``set_async_sampled_token_ids``, which the
        runner calls after ``if not self.use_async_scheduling: return``: outside that mode it
        stays None, so a wait behind ``if self.sampled_token_ids_cpu is None: return`` is guarded.
        A constructor counts as called where its class is (``Setter()`` in ``setters``).
        """
        walker = self._walker(facts, None)
        modes: dict[str, set[Guard]] = {}  # setter -> guards around its calls
        wanted = {m for attr, ms in setters.items() if attr not in facts.presence for m in ms}
        # ``.method(`` behind one literal dot (sre skips to the dots instead of trying every
        # name at every position), ``Setter(`` as they are; each a tree of shared prefixes
        methods = _literals(m for m in wanted if not m.endswith("()"))
        built = _literals(m[:-1] for m in wanted if m.endswith("()"))
        needles = [re.compile(p) for p in (methods and rf"\.{methods}\(", built) if p]
        names = frozenset(m.removesuffix("()") for m in wanted)
        for function in self._functions():
            lines = function.module.lines[function.node.lineno - 1 : function.node.end_lineno]
            text = "\n".join(lines)
            if not any(needle.search(text) for needle in needles):
                continue
            for call in walker.walk(function.node, context=function, calls_only=True,
                                    calling=names).calls:
                name = call.name.rpartition(".")[2]
                key = f"{name}()" if call.how == "name" else name
                if call.how in ("self", "attr", "name") and key in wanted:
                    modes.setdefault(key, set()).add(strongest(call.conditions))
        for attr, methods in setters.items():
            if attr in facts.presence:
                continue
            guards = {g for m in methods for g in modes.get(m, {Guard.NONE})}
            if len(guards) == 1 and (guard := guards.pop()) is not Guard.NONE:
                facts.presence[attr] = (False, guard.value)

    def _functions(self) -> list[FunctionInfo]:
        return [
            *(m for cls in self.index.classes for m in cls.methods.values()),
            *self.index.functions.values(),
        ]

    def _made_by(self, module: SourceModule, name: str, owner: ClassInfo | None = None,
                 depth: int = 0) -> list[ClassInfo]:
        """The classes ``name(...)`` builds: a scanned class, or every class a factory returns
        (``init_model_state(...)``, ``self._get_drafter()``, a factory calling a factory)."""
        if not name or depth > 3:
            return []
        if name.startswith("self.") and owner is not None:
            method = self.index.lookup(owner, name[5:])
            if method is None:  # self.model_cls(...): a class the class body names
                return self._class_attribute_classes(owner, name[5:])
            return self._returned_classes(method, owner, depth)
        cls = self.index.resolve_class(module, name)
        if cls is not None:
            return [cls, *self._patches.get((cls.module.name, cls.name), [])]
        head, _, method = name.rpartition(".")
        called = self.index.resolve_class(module, head) if head else None
        if called is not None:
            return self._alternative_constructor(called, method, owner, depth)
        return self._returned_classes(self.index.resolve_function(module, name), owner, depth)

    def _class_attribute_classes(self, owner: ClassInfo, attr: str) -> list[ClassInfo]:
        """The classes a class attribute holds (``model_cls = AXK1Model`` in the class body),
        in ``owner``, its bases and every scanned subclass that sets it again."""
        found: list[ClassInfo] = []
        for cls in [*self.index.mro(owner), *(c for c in self.index.classes
                                             if owner in self.index.mro(c)[1:])]:
            for statement in cls.node.body:
                if isinstance(statement, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == attr for t in statement.targets):
                    held = self.index.resolve_class(cls.module, dotted(statement.value))
                    if held is not None and held not in found:
                        found.append(held)
        return found

    def _alternative_constructor(self, cls: ClassInfo, method: str, owner: ClassInfo | None,
                                 depth: int) -> list[ClassInfo]:
        """``Tokenizer.from_pretrained(path)``: a classmethod builds the class it is called on
        (``return cls(...)``); one inherited from an unscanned base (Hugging Face's
        ``from_pretrained`` / ``from_config``) does by the ``from_`` convention."""
        factory = self.index.lookup(cls, method)
        if factory is None:
            return [cls] if method.startswith("from_") else []
        return self._returned_classes(factory, owner, depth, called=cls)

    def _returned_classes(self, factory: FunctionInfo | None, owner: ClassInfo | None,
                          depth: int, called: ClassInfo | None = None) -> list[ClassInfo]:
        """Every class a factory's ``return`` statements build (``called`` for ``cls(...)``),
        else the class its return annotation declares."""
        if factory is None:
            return []
        made: list[ClassInfo] = []
        builders = {n: v for n, v in _local_calls(factory.node)}
        for value in _returns_of(factory.node):
            if isinstance(value, ast.Name) and value.id in builders:
                value = builders[value.id]  # drafter = EagleProposer(...); return drafter
            if not isinstance(value, ast.Call):
                continue
            built = [called] if called is not None and dotted(value.func) == "cls" else \
                self._made_by(factory.module, dotted(value.func), factory.owner or owner,
                              depth + 1)
            made.extend(c for c in built if c not in made)
        if not made and factory.node.returns is not None:
            # ``def get_worker(...) -> Worker: ... return _CACHE[key]``
            return self._declared(factory.module, element_class(factory.node.returns),
                                  factory.owner or owner, depth)
        return made

    def _type_stored_parameters(
        self, parameters: dict[int, list[tuple[str, str]]],
        constructions: list[tuple[ClassInfo, ast.Call, list[ClassInfo]]],
    ) -> None:
        """``self.tokenizer = tokenizer`` of a constructor parameter no annotation types: the
        classes every scanned ``self.x = Class(...)`` passes there (``Wrapper(self.tokenizer)``
        of a typed attribute, ``Wrapper(Tokenizer(...))``), so a call on it lands in their
        methods (a CUDA-graph wrapper's eager fallback into the module it wraps)."""
        for caller, call, built in constructions:
            for cls in built:
                init = cls.methods.get("__init__")
                for attr, name in parameters.get(id(cls), []) if init is not None else []:
                    passed = _argument_for(init, call, name)
                    annotation = param_annotation(init.node, name)
                    if annotation is not None:  # ``tokenizer: Tokenizer``
                        made = self._declared(cls.module, element_class(annotation), cls)
                    elif is_self_attribute(passed):
                        made = [c for k in self.index.mro(caller)
                                for c in self._attr_types.get((id(k), passed.attr), [])]
                    elif isinstance(passed, ast.Call):
                        made = self._made_by(caller.module, dotted(passed.func), caller)
                    else:
                        continue
                    types = self._attr_types.setdefault((id(cls), attr), [])
                    types.extend(c for c in made if c not in types)

    def _declared(self, module: SourceModule, annotated: str, owner: ClassInfo | None,
                  depth: int = 0) -> list[ClassInfo]:
        """The scanned class an annotation declares where the value's maker says nothing
        (a cache lookup, an unscanned call): ``self.svc: Worker | None = get_worker()``."""
        return self._made_by(module, annotated, owner, depth + 1)

    def facts(self, function: FunctionInfo) -> FunctionFacts:
        found = self._facts.get(id(function))
        if found is None:
            walker = self._walker_with_facts
            found = self._facts[id(function)] = walker.walk(function.node, context=function)
        return found

    def _walker(self, facts: Facts, returns: _ReturnPlaces | None) -> FunctionWalker:
        values = ValueModel(self.config, facts, returns)
        return FunctionWalker(self.config, values, GuardEvaluator(self.config, facts),
                              self._properties)

    def _warmup(self, function: FunctionInfo) -> bool:
        return self.config.warmup_functions.match(function.name)

    def _edges(self, node: Node) -> list[tuple[Node, Guard]]:
        cache_key = (id(node[0]), id(node[1]))
        cached = self._edge_cache.get(cache_key)
        if cached is not None:
            return cached
        ctx, function = node
        edges: list[tuple[Node, Guard]] = []
        self._edge_cache[cache_key] = edges
        for call in self.facts(function).calls:
            for target in self._resolve(ctx, function, call):
                guard = strongest(call.conditions)
                if self._warmup(target[1]) and guard.rank < Guard.WARMUP.rank:
                    guard = Guard.WARMUP
                if (call.how == "dispatch" and guard.rank < Guard.OPT_IN.rank
                        and id(target[0]) not in self._defaults):
                    guard = Guard.OPT_IN  # a backend no model picks without a switch
                edges.append((target, guard))
        return edges

    def _implements(self, cls: ClassInfo) -> bool:
        """``cls`` or a base (scanned, or only named) matches ``[entries] dispatch_classes``."""
        wanted = self.config.dispatch_classes.match
        return any(
            wanted(k.name) or any(wanted(dotted(b).rpartition(".")[2]) for b in k.node.bases)
            for k in self.index.mro(cls)
        )

    def _dispatch(self, method: str) -> list[Node]:
        """Where ``builder.method()`` may land: that method of every dispatch class."""
        nodes: list[Node] = []
        for cls in self._implementations:
            found = self.index.lookup(cls, method)
            if found is not None:
                nodes.append((cls, found))
        return nodes

    def _resolve(self, ctx: ClassInfo | None, function: FunctionInfo, call: Call) -> list[Node]:
        """The functions a call may land in (several for an attribute of several classes)."""
        if call.how == "self":
            found = self.index.lookup(ctx, call.name) if ctx else None
            if found:
                return [(ctx, found)]
            bound = self._bound_methods(ctx, call.name) if ctx else []
            return (bound or self._attr_calls(ctx, call.name, "__call__")  # self.model(...)
                    or self._model_calls(ctx, call.name, "__call__")
                    or self._fetched_model_method(ctx, call.name))
        if call.how == "attr":
            attr, _, method = call.name.partition(".")
            return self._attr_calls(ctx, attr, method) or self._model_calls(ctx, attr, method)
        if call.how == "chain":
            nodes = self._chain_calls(ctx, call.name)
            return [n for n in nodes if _is_property(n[1].node)] if call.load else nodes
        if call.how == "dispatch":
            return self._dispatch(call.name)
        if call.how == "op":
            # the op's function, run for the layer that called it: its ``self._forward(...)``
            # on the layer it fetches from the forward context lands in the caller's class
            return [(ctx, f) for f in self._custom_ops.get(call.name, [])]
        if call.how == "local":
            return self._local_calls(ctx, function, call)
        if call.how == "apply":  # an autograd Function's apply runs its forward
            cls = self.index.resolve_class(function.module, call.name)
            found = self.index.lookup(cls, "forward") if cls is not None else None
            return [(cls, found)] if found else []
        if call.how == "object":
            owners = self.index.record_methods(call.name)
            return [(owners[0].owner, owners[0])] if len(owners) == 1 and owners[0].owner else []
        if call.how == "super":
            if ctx is None or function.owner is None:
                return []
            found = self.index.lookup(ctx, call.name, after=function.owner)
            return [(ctx, found)] if found else []
        imported = function.module.imports.get(call.name)
        patched = self._function_patches.get(imported) if imported is not None else None
        if patched is not None:
            return [(None, patched)]  # a plugin replaced the module's function it imports
        module_function = self.index.resolve_function(function.module, call.name)
        if module_function is not None:
            return [(None, module_function)]
        cls = self.index.resolve_class(function.module, call.name)
        if cls is not None:
            init = self.index.lookup(cls, "__init__")
            return [(cls, init)] if init else []
        return []

    def _local_calls(self, ctx: ClassInfo | None, function: FunctionInfo, call: Call) -> list[Node]:
        """``session.step()`` where ``session = self._open_session()``, ``Session(...)`` or a
        parameter ``session: Session``: that method of every class those makers build."""
        nodes: list[Node] = []
        for maker in call.makers:
            key = (id(function.module), maker, id(ctx))
            made = self._local_types.get(key)
            if made is None:
                made = self._local_types[key] = self._made_by(function.module, maker, ctx)
            for cls in made:
                for node in self._methods(cls, call.name):
                    if node not in nodes:
                        nodes.append(node)
        return nodes

    def _attr_calls(self, ctx: ClassInfo | None, attr: str, method: str) -> list[Node]:
        """``self.attr.method()`` for each scanned class ``self.attr`` is built from in ``ctx``."""
        if ctx is None:
            return []
        nodes: list[Node] = []
        for owner in self.index.mro(ctx):
            for cls in self._attr_types.get((id(owner), attr), []):
                for node in self._methods(cls, method):
                    if node not in nodes:
                        nodes.append(node)
        return nodes

    def _model_calls(self, ctx: ClassInfo | None, attr: str, method: str) -> list[Node]:
        """``self.model.method()`` where no scanned class is stored in ``self.model`` (or an
        attribute a model factory filled): the loader's model, any scanned model class; its
        ``sample`` runs the layer sampler when no scanned model defines one. Inside a model
        class ``self.model`` is its own backbone, which the class builds, not the loader's
        model: only a factory's slot fans out there."""
        if ctx is None:
            return []
        slot = any((id(k), attr) in self._model_slots for k in self.index.mro(ctx))
        if not slot and (not self.config.model_receivers.match(attr) or self._model_class(ctx)):
            return []
        text = any(self._text_slots.get((id(k), attr), False) for k in self.index.mro(ctx))
        nodes = self._named_architectures(ctx, attr, method) or \
            self._model_methods_named(method, text_only=text)
        if not nodes and method == "sample":
            nodes = [n for cls in self._samplers for n in self._methods(cls, "__call__")]
        return nodes

    def _model_class(self, cls: ClassInfo) -> bool:
        """``cls`` is one of the scanned model classes (where ``self.model`` is its backbone)."""
        return id(cls) in self._model_ids

    def _named_architectures(self, ctx: ClassInfo, attr: str, method: str) -> list[Node]:
        """``self.code2wav.method()`` where every factory call that fills ``self.code2wav``
        names its architectures (``architectures=["Qwen3OmniMoeCode2Wav"]``): that method of
        the scanned classes of those names, not of every model (another family's code2wav
        stage). Empty when a call names none or no scanned class has such a name."""
        named = next((self._slot_architectures[(id(k), attr)] for k in self.index.mro(ctx)
                      if (id(k), attr) in self._slot_architectures), set())
        if not named or "" in named:
            return []
        return [n for cls in self.index.classes if cls.name in named
                for n in self._methods(cls, method)]

    def _fetched_model_method(self, ctx: ClassInfo | None, attr: str) -> list[Node]:
        """``self.talker_mtp(...)`` after ``self.talker_mtp = getattr(self.model, "talker_mtp",
        None)``: that method of the scanned model classes."""
        name = next((self._model_methods[(id(k), attr)] for k in self.index.mro(ctx)
                     if (id(k), attr) in self._model_methods), "") if ctx else ""
        return self._model_methods_named(name) if name else []

    def _model_methods_named(self, method: str, text_only: bool = False) -> list[Node]:
        """Where ``model.method()`` may land: that method of every scanned model class; of
        the text models only for a slot built from a text config (:func:`_text_config`)."""
        return [n for cls in self._models if not (text_only and self._multimodal(cls))
                for n in self._methods(cls, method)]

    def _multimodal(self, cls: ClassInfo) -> bool:
        """``cls`` or a base declares the multimodal interface (``SupportsMultiModal``), by a
        scanned class's name or by the name its bases are written with."""
        interfaces = self.config.multimodal_interfaces
        return any(interfaces.match(k.name) or any(
            interfaces.match(dotted(base).rpartition(".")[2]) for base in k.node.bases)
            for k in self.index.mro(cls))

    def _methods(self, cls: ClassInfo, method: str) -> list[Node]:
        """Where ``obj.method()`` lands for an object of ``cls``: the method, else ``forward``
        for a call of an ``nn.Module``, else the methods ``__init__`` bound to that name; and
        the methods a setter installed as that attribute (it shadows the class's own)."""
        installed = [(cls, f) for k in self.index.mro(cls)
                     for name in self._installed.get((id(k), method), ())
                     if (f := self.index.lookup(cls, name)) is not None]
        return [*installed, *self._own_methods(cls, method)]

    def _own_methods(self, cls: ClassInfo, method: str) -> list[Node]:
        found = self.index.lookup(cls, method)
        if found is None and method == "__call__":
            found = self.index.lookup(cls, "forward")  # nn.Module.__call__ runs forward
            if found is None:
                return self._bound_methods(cls, "forward")
        if found is None:
            return self._bound_methods(cls, method) or self._submodule_calls(cls, method)
        return [(cls, found)]

    def _submodule_calls(self, cls: ClassInfo, attr: str) -> list[Node]:
        """``obj.decoder(hs)`` where ``decoder`` is no method but an attribute of ``obj``'s
        class holding a scanned module: that module's ``__call__`` (its ``forward``)."""
        return [node for k in self.index.mro(cls) for sub in self._attr_types.get((id(k), attr), [])
                if sub is not cls for node in self._own_methods(sub, "__call__")]

    def _bound_methods(self, cls: ClassInfo, attr: str) -> list[Node]:
        """``self.forward = self.forward_native`` (a dispatch chosen in ``__init__``): each
        method bound to ``attr`` in ``cls`` or its bases, resolved in ``cls`` (overrides win)."""
        nodes: list[Node] = []
        for owner in self.index.mro(cls):
            for name in self._aliases.get((id(owner), attr), []):
                found = self.index.lookup(cls, name)
                if found is not None and (cls, found) not in nodes:
                    nodes.append((cls, found))
        return nodes

    def _chain_calls(self, ctx: ClassInfo | None, chain: str) -> list[Node]:
        """``self.a.b.method()`` and calls on the items of ``self.items``: the classes each
        link is built from, link by link (``[]`` is an item of a list built in place)."""
        if ctx is None:
            return []
        *links, method = chain.split(".")
        classes = [ctx]
        for link in links:
            if link == "[]":
                continue
            classes = list({id(c): c for owner in classes for k in self.index.mro(owner)
                            for c in self._attr_types.get((id(k), link), [])}.values())
            if not classes:
                return []
        nodes: list[Node] = []
        for cls in classes:
            for node in self._methods(cls, method):
                if node not in nodes:
                    nodes.append(node)
        return nodes

    def search(
        self, runner: ClassInfo, entries: list[FunctionInfo], allow: Sequence[AllowRule],
        floor: Guard = Guard.NONE,
    ) -> list[Finding]:
        """Sync sites reachable from ``runner``'s entries: one finding per site and caller.

        A helper such as ``_sync_device`` is reported once for each function that calls it, so
        the prompt-logprobs wait and the pooling wait stay two findings with their own guards.
        ``floor`` is the guard the entries themselves run under (an opt-in backend's impl).
        """
        reached: dict[tuple[int, int], tuple[Guard, list[Node], FunctionInfo]] = {}
        for threshold in Guard:  # weakest first: the first threshold that reaches a node wins
            for entry in entries:
                for key, path in self._bfs((runner, entry), threshold).items():
                    reached.setdefault(key, (max(threshold, floor, key=lambda g: g.rank),
                                             path, entry))
        best: dict[tuple[int, int | None], tuple[Guard, list[Node], FunctionInfo]] = {}

        def offer(caller: FunctionInfo | None, guard: Guard, path: list[Node], entry: FunctionInfo):
            key = (id(path[-1][1]), id(caller) if caller else None)
            if key not in best or guard.rank < best[key][0].rank:
                best[key] = (guard, path, entry)

        for threshold, path, entry in reached.values():
            if len(path) == 1:
                offer(None, threshold, path, entry)
            for target, edge_guard in self._edges(path[-1]):
                if self.facts(target[1]).sites:
                    guard = max(threshold, edge_guard, key=lambda g: g.rank)
                    offer(path[-1][1], guard, [*path, target], entry)
        called = {function for function, caller in best if caller is not None}
        weakest: dict[int, int] = {}
        for (function_id, _caller), (guard, _path, _entry) in best.items():
            weakest[function_id] = min(weakest.get(function_id, guard.rank), guard.rank)
        findings = []
        for (function_id, caller), (threshold, path, entry) in best.items():
            if caller is None and function_id in called:
                continue  # an entry that another entry calls: reported with its caller
            if threshold.rank > weakest[function_id]:
                continue  # a more guarded route to a function that is reached less guarded
            ctx, function = path[-1]
            routes = self._routes_on_self(path)
            for site in self.facts(function).sites:
                if ctx is not None and all(contradictory([*route, *site.conditions], ctx)
                                           for route in routes):
                    continue  # every route on self from this caller tests a member both ways
                if self._always_passed(path, site):
                    continue  # a parameter's fallback this caller never leaves to run
                guards = [threshold, strongest(site.conditions)]
                if self._warmup(function):
                    guards.append(Guard.WARMUP)
                guard = max(guards, key=lambda g: g.rank)
                finding = self._finding(runner, entry, path, site, guard, allow)
                if finding is not None:
                    findings.append(finding)
        return findings

    def _routes_on_self(self, path: list[Node]) -> list[tuple[Condition, ...]]:
        """The conditions of each call on ``self`` by which the caller reaches the function
        ``path`` ends in, or one empty route when it reaches it otherwise: with a site's own
        conditions, what :func:`contradictory` reads. A site no route can take is not reported
        for this caller; other callers still report it."""
        ctx, function = path[-1]
        if len(path) < 2 or ctx is None or path[-2][0] is not ctx:
            return [()]
        caller = path[-2][1]
        routes = [call.conditions for call in self.facts(caller).calls
                  if call.how in ("self", "super") and (ctx, function) in self._resolve(ctx, caller, call)]
        return routes or [()]

    def _always_passed(self, path: list[Node], site: Site) -> bool:
        """``site`` runs only when a parameter is None (``if max_len is None: max_len =
        int(lengths.max().item())``) or only when it is not (``if embeddings is not None:``),
        the function does not bind that name before the test, and every call by which
        ``path``'s caller reaches the function settles it the other way: it passes a value that
        is never None there (``max_len=feat_len``, ``feat_len = max(1, int(...))``), or it
        leaves a parameter whose default is None out (``embed_input_ids(input_ids)``) or passes
        None. The branch never runs from this caller; other callers still report it."""
        if len(path) < 2:
            return False
        tested = parameter_none_tests(site.conditions)
        if not tested:  # most sites: no None test of a plain name
            return False
        (caller_ctx, caller), (_ctx, function) = path[-2], path[-1]
        defaults = _parameter_defaults(function)
        tests = {name: test for name, test in tested.items() if name in defaults}
        rebound = {name for name, _value, _how, line in bindings(function.node)
                   if name in tests and line < tests[name][1]}
        demands = {name: none for name, (none, _line) in tests.items() if name not in rebound}
        if not demands:
            return False
        calls = [call.node for call in self.facts(caller).calls
                 if path[-1] in self._resolve(caller_ctx, caller, call)]

        def settled(call: ast.Call, name: str) -> bool:
            passed = _argument_for(function, call, name)
            if not demands[name]:  # the branch needs a value: the call leaves it None
                return is_none(passed) or (passed is None and _passes_all(call) and
                                           is_none(defaults[name]))
            return never_none(passed, caller.node)

        return bool(calls) and all(call is not None and any(settled(call, name) for name in demands)
                                   for call in calls)

    def reach(self, runner: ClassInfo, entries: list[FunctionInfo]) -> set[tuple[str, str]]:
        """(file, qualname) of each function ``runner``'s entries reach through calls weaker
        than opt-in: the default, non-speculative step, where :meth:`search` fails a sync."""
        return {(path[-1][1].module.display, path[-1][1].qualname) for entry in entries
                for path in self._bfs((runner, entry), Guard.ALLOWED).values()}

    def _argument(self, path: list[Node], param: str, field: str = "") -> tuple[Place, str]:
        """Where the value a caller on ``path`` passes as ``param`` (its ``field``, when the
        site reads one) lives, and which caller it is.

        Any call passing a device value decides (it names that caller); a caller's own parameter
        passed on is followed one step further up the path, whose answer wins over what the
        caller alone says (its annotation, a record field's usual residence); a record the
        caller builds
        (``Meta(seq_lens=self.seq_lens.gpu[:n])``) gives its field the residence of what is
        stored in it.
        """
        if len(path) < 2:
            return Place.UNKNOWN, ""
        (caller_ctx, caller), (_ctx, callee) = path[-2], path[-1]
        params = [a.arg for a in [*callee.node.args.posonlyargs, *callee.node.args.args]]
        if callee.owner is not None and params[:1] in (["self"], ["cls"], ["ctx"]):  # ctx: apply
            params = params[1:]
        places: list[tuple[Place, str]] = []
        values = self._arguments
        for call in self.facts(caller).calls:
            if call.node is None or path[-1] not in self._resolve(caller_ctx, caller, call):
                continue
            passed = next((k.value for k in call.node.keywords if k.arg == param), None)
            positional = [a for a in call.node.args if not isinstance(a, ast.Starred)]
            if passed is None and param in params and params.index(param) < len(positional):
                passed = positional[params.index(param)]
            if passed is None:
                continue
            if values.context is not caller:
                values.bind_function(caller.node, caller)
            stored = _stored(values, passed, field) if field else None
            place = values.place(stored if stored is not None else passed)
            if field and stored is None:  # a field of the record passed: where the record is
                place = values.field_place(field) if place is Place.DEVICE else Place.UNKNOWN
            name, upper_field = values.derived(stored if stored is not None else passed) \
                or ("", "")
            if field and stored is None:
                upper_field = upper_field or field  # the record passed on: the same field
            where = f"{caller.qualname} (line {call.line})"
            if name:  # the caller's own parameter passed on: its callers know better
                upper_place, upper = self._argument(path[:-1], name, upper_field)
                if upper_place is not Place.UNKNOWN:
                    place, where = upper_place, upper or where
            places.append((place, where))
        device = next((w for p, w in places if p is Place.DEVICE), None)
        if device is not None:
            return Place.DEVICE, device
        if places and all(p is Place.HOST for p, _ in places):
            return Place.HOST, places[0][1]
        return Place.UNKNOWN, ""

    def _record_field(self, function: FunctionInfo, site: Site) -> str:
        """The record class of ``site``'s parameter when it is one the runner fills with
        host/device pairs (``[values] device_records``) and the field read is no host data by
        its annotation or name: its fields are device tensors then."""
        annotation = param_annotation(function.node, site.param)
        record = dotted(annotation).rpartition(".")[2] if annotation is not None else ""
        if not record or not self.config.device_records.match(record):
            return ""
        if self._arguments.facts.annotated.get(site.field) is Place.HOST or \
                self.config.host.match(site.field):
            return ""
        return record

    def _path_conditions(self, path: list[Node]) -> list[Condition]:
        """The conditions around each call on the path (the least guarded call per step)."""
        found: list[Condition] = []
        for caller, callee in pairwise(path):
            calls = [
                c for c in self.facts(caller[1]).calls
                if callee in self._resolve(caller[0], caller[1], c)
            ]
            if calls:
                found.extend(min(calls, key=lambda c: strongest(c.conditions).rank).conditions)
        return found

    def _device_receiver(self, path: list[Node]) -> bool:
        """The last call on ``path`` is a method of a device-computed record (its fields are
        on the device: ``LogprobsTensors.tolists`` reached from ``logprobs_tensors.tolists()``)."""
        if len(path) < 2:
            return False
        caller, callee = path[-2], path[-1]
        return any(
            c.how == "object" and callee in self._resolve(caller[0], caller[1], c)
            for c in self.facts(caller[1]).calls
        )

    def _bfs(self, start: Node, threshold: Guard) -> dict[tuple[int, int], list[Node]]:
        """Shortest paths from ``start`` using only edges no stronger than ``threshold``."""
        def key(node: Node) -> tuple[int, int]:
            return (id(node[0]), id(node[1]))

        paths = {key(start): [start]}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for target, guard in self._edges(node):
                if guard.rank > threshold.rank or key(target) in paths:
                    continue
                paths[key(target)] = [*paths[key(node)], target]
                queue.append(target)
        return paths

    def _finding(
        self,
        runner: ClassInfo,
        entry: FunctionInfo,
        path: list[Node],
        site: Site,
        guard: Guard,
        allow: Sequence[AllowRule],
    ) -> Finding | None:
        function = path[-1][1]
        kind = site.kind.value
        reason, record = "", ""
        known = site.known
        if site.target and self._argument(path, *site.target.split(".", 1))[0] is Place.HOST:
            return None  # x.to(device=t.device) where every caller passes a host t: host to host
        if site.param:
            # a parameter read back: the callers' arguments say where it lives, before its name
            passed, caller = self._argument(path, site.param, site.field)
            if any(_tests_host_twin(c, site, self.config) for c in site.conditions):
                # meta.seq_lens.cpu() under `meta.seq_lens_cpu is None`: the fallback for a
                # host copy the runner fills by default, not a read of the default path
                passed, known = Place.UNKNOWN, False
            elif site.field and passed is Place.UNKNOWN:
                record = self._record_field(function, site)
            if passed is Place.HOST or (passed is Place.UNKNOWN and site.host and not record):
                return None
            read = f"{site.param}.{site.field}" if site.field else site.param
            if passed is Place.DEVICE:
                known = True
                reason = f"{caller} passes a device value as '{read}'"
            elif record:
                known = True
                reason = f"'{read}' is a device field of {record} (its host twin is *_cpu)"
        if guard is Guard.NONE:
            symbols = [function.symbol, *(n[1].symbol for n in path)]
            # overrides = true: the rule for Base.method also covers Sub.method (same role)
            overridden = [
                f"{k.module.name}:{k.name}.{function.name}"
                for k in (self.index.mro(function.owner) if function.owner else [])
            ]
            rule = next(
                (r for r in allow
                 if any(r.matches_symbol(s, kind) for s in symbols)
                 or (r.overrides and any(r.matches_symbol(s, kind) for s in overridden))),
                None,
            )
            if rule is not None:
                guard, reason = Guard.ALLOWED, rule.reason
            elif not known and not (site.on_self and self._device_receiver(path)):
                guard = Guard.UNKNOWN_RESIDENCE
                reason = "nothing says the value read back is on the device"
        around = (*self._path_conditions(path), *site.conditions)
        region = next((c.text for c in around if c.truth.guard is Guard.ALLOWED), "")
        if guard is Guard.NONE and region:
            unnamed = f"inside `{region}`, but no allow rule names this site"
            reason = f"{reason}; {unnamed}" if reason else unnamed
        conditions = [_describe(c) for c in around]
        lines = function.module.lines
        code = lines[site.line - 1].strip() if 0 < site.line <= len(lines) else ""
        return Finding(
            file=function.module.display,
            line=site.line,
            qualname=function.qualname,
            kind=kind,
            api=site.api,
            guard=guard.value,
            entry=f"{runner.name}.{entry.name}",
            path=tuple(node[1].qualname for node in path),
            runner=runner.symbol,
            symbol=function.symbol,
            code=code,
            conditions=tuple(conditions),
            reason=reason,
            entry_symbol=f"{runner.symbol}.{entry.name}",
            why=explain(site.api),
            upload=site.upload,
        )


def keeps(unknown: bool, cuts: int, facts: Facts) -> bool:
    """Whether a judgement of a helper's return is memoised: not an unknown met on a cut
    recursion (``facts.cuts`` moved since ``cuts``), which a later ask outside that recursion
    may answer (vllm-ascend 0.23.0's GDN uploads of ``prepare_chunk_offsets(cu_seqlens_cpu)``
    went quiet when first judged from inside a record field's judgement)."""
    return not unknown or facts.cuts == cuts


class _ReturnPlaces:
    """Where the value a scanned function returns lives, for the value model of its callers.

    Follows module functions and ``self.`` methods (resolved from the caller's class), through
    returned tuples item by item and through calls returned as they are: enough to see that
    ``coordinate_batch_across_dp`` hands back a CPU tensor two helpers down.
    """

    _MAX_DEPTH = 6

    def __init__(self, index: SourceIndex, config: ScanConfig, facts: Facts) -> None:
        self.index = index
        self.config = config
        self.facts = facts
        self._cache: dict[tuple, tuple[Place, set[str]]] = {}
        self._pins: dict[tuple, Pin] = {}
        self._pin_asks: dict[int, set[str]] = {}  # the parameters a helper's pin needed
        self._active: set[tuple] = set()
        self._pinning: set[tuple] = set()  # pins being judged

    def __call__(self, context: object, call: ast.Call, element: int | None,
                 caller: ValueModel | None = None) -> Place:
        target = self._target(context, call) if isinstance(context, FunctionInfo) else None
        if target is None:
            return Place.UNKNOWN
        key = (id(target), element)
        place, asked = self._place(target, element, key, None)
        if place is Place.HOST:
            return place
        # the result depends on parameters: judge the helper for this call's arguments
        # (``_pad(x, lens.cpu())`` returns a host tensor made ``device=lens.device``)
        judged = _host_arguments(target, call, caller, asked)
        if judged is None:
            return place  # only a host argument turns an unknown or device result around
        known, passed = judged
        return self._place(target, element, (*key, known), passed)[0]

    def _place(self, target: FunctionInfo, element: int | None, key: tuple,
               arguments: Arguments | None) -> tuple[Place, set[str]]:
        """(place, the parameters it needed), memoised per ``key``."""
        if key in self._cache:
            return self._cache[key]
        if key in self._active or len(self._active) >= self._MAX_DEPTH:
            self.facts.cuts += 1
            return Place.UNKNOWN, set()  # recursion, or too deep to be worth it
        self._active.add(key)
        cuts = self.facts.cuts
        try:
            found = self._compute(target, element, arguments)
        finally:
            self._active.discard(key)
        if keeps(found[0] is Place.UNKNOWN, cuts, self.facts):
            self._cache[key] = found
        return found

    def pin(self, context: object, call: ast.Call, caller: ValueModel | None = None) -> Pin:
        """``buf = self._make_buffer()``: the pinning of what the helper allocates and returns;
        judged again for this call's arguments when that is unknown and it depends on them
        (``torch.cumsum(lens(cu)) - 1`` is a pageable host tensor when the caller's ``cu`` is
        a host tensor)."""
        target = self._target(context, call) if isinstance(context, FunctionInfo) else None
        if target is None:
            return Pin.UNKNOWN
        key = (id(target), -1)
        if key not in self._pins:
            pin = self._pin_once(key, target, None)
        else:
            if key in self._pinning:
                self.facts.cuts += 1
            pin = self._pins[key]
        if pin is Pin.UNKNOWN and key in self._active:
            self.facts.cuts += 1
        judged = None if pin is not Pin.UNKNOWN or key in self._active else \
            _host_arguments(target, call, caller, self._pin_asks.get(id(target), set()))
        if judged is None:
            return pin
        known, passed = judged
        per_call = (*key, known)
        if per_call not in self._pins:
            self._active.add(key)
            try:
                return self._pin_once(per_call, target, passed)
            finally:
                self._active.discard(key)
        if per_call in self._pinning:
            self.facts.cuts += 1
        return self._pins[per_call]

    def _pin_once(self, key: tuple, target: FunctionInfo, passed: Arguments | None) -> Pin:
        """The pinning of ``target``'s return judged for ``key``, kept as ``keeps`` says."""
        self._pins[key] = Pin.UNKNOWN  # recursion
        self._pinning.add(key)
        cuts = self.facts.cuts
        try:
            pin = self._pin_of(target, passed)
        finally:
            self._pinning.discard(key)
        if keeps(pin is Pin.UNKNOWN, cuts, self.facts):
            self._pins[key] = pin
        else:
            del self._pins[key]
        return pin

    def _returns_device_record(self, target: FunctionInfo) -> bool:
        """A helper annotated to hand back a ``[values] device_records`` record (a rewritten
        ``CommonAttentionMetadata``): its fields and its methods' results follow the record."""
        returns = target.node.returns
        return returns is not None and \
            self.config.device_records.match(dotted(returns).rpartition(".")[2])

    def _pin_of(self, target: FunctionInfo, arguments: Arguments | None) -> Pin:
        model = ValueModel(self.config, self.facts, self)
        model.bind_function(target.node, target)
        if arguments is not None:
            model.trust_annotations = False
            model.arguments = arguments
        pins = {model.pin(v) for v in _returns_of(target.node) if not is_none(v)}
        if arguments is None:
            self._pin_asks[id(target)] = set(model.asked)
        return pins.pop() if len(pins) == 1 else Pin.UNKNOWN

    def _target(self, caller: FunctionInfo, call: ast.Call) -> FunctionInfo | None:
        func = call.func
        if isinstance(func, ast.Name):
            return self.index.resolve_function(caller.module, func.id)
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and caller.owner is not None
        ):
            return self.index.lookup(caller.owner, func.attr)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            # meta.compute_num_computed_tokens() of a parameter ``meta: CommonAttentionMetadata``
            # of a scanned class: that class's method
            annotation = param_annotation(caller.node, func.value.id)
            cls = self.index.resolve_class(caller.module, element_class(annotation)) \
                if annotation is not None else None
            return self.index.lookup(cls, func.attr) if cls is not None else None
        if isinstance(func, ast.Attribute) and not tensor_or_container_method(func.attr):
            # self.batch.tables[gid].host_array(): an object's method no tensor has, defined
            # by one scanned class
            return self.index.only_method(func.attr)
        return None

    def _compute(self, target: FunctionInfo, element: int | None,
                 arguments: Arguments | None) -> tuple[Place, set[str]]:
        if element is None and self._returns_device_record(target):
            return Place.DEVICE, set()
        model = ValueModel(self.config, self.facts, self)
        model.bind_function(target.node, target)
        model.trust_annotations = False
        model.arguments = arguments
        places = set()
        for value in _returns_of(target.node):
            if element is not None and isinstance(value, ast.Tuple):
                value = value.elts[element] if element < len(value.elts) else None
            elif element is not None and isinstance(value, ast.Call):
                places.add(self(target, value, element, model))
                continue
            elif element is not None:
                return Place.UNKNOWN, model.asked  # a tuple built elsewhere: not followed
            if value is not None and not is_none(value):
                places.add(model.place(value))
        return (places.pop() if len(places) == 1 else Place.UNKNOWN), model.asked


def _host_arguments(target: FunctionInfo, call: ast.Call, caller: ValueModel | None,
                    asked: set[str]) -> tuple[tuple, Arguments] | None:
    """(the key part, the arguments) to judge ``target`` again for ``call``: when its answer
    needed the parameters ``asked`` and the caller passes a host value for one of them (only a
    host argument turns an unknown or device answer around); None otherwise."""
    if not asked or caller is None:
        return None
    passed = _passed(target, call, caller)
    known = tuple(sorted((p, passed(p)) for p in asked))
    return (known, passed) if any(place is Place.HOST for _, place in known) else None


def _passed(target: FunctionInfo, call: ast.Call, caller: ValueModel) -> Arguments:
    """Where ``call``'s argument for each parameter of ``target`` lives, in the caller."""
    def place(param: str) -> Place:
        value = _argument_for(target, call, param)
        return caller.place(value) if value is not None else Place.UNKNOWN

    return place


def _argument_for(target: FunctionInfo, call: ast.Call, param: str) -> ast.expr | None:
    """The expression ``call`` passes for ``target``'s parameter ``param`` (by keyword or by
    position; a method's ``self`` is not passed), else None."""
    found = keyword(call, param)
    if found is not None:
        return found
    args = target.node.args
    params = [a.arg for a in [*args.posonlyargs, *args.args]]
    if target.owner is not None and params[:1] in (["self"], ["cls"]):
        params = params[1:]  # self.helper(...), Class(...)
    for name, value in zip(params, call.args, strict=False):
        if isinstance(value, ast.Starred):
            return None
        if name == param:
            return value
    return None


def _parameter_defaults(function: FunctionInfo) -> dict[str, ast.expr | None]:
    """Each parameter of ``function`` -> its default (None where it has none)."""
    args = function.node.args
    positional = [*args.posonlyargs, *args.args]
    found: dict[str, ast.expr | None] = {a.arg: None for a in positional}
    for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults,
                            strict=True):
        found[arg.arg] = default
    found.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)})
    return found


def _passes_all(call: ast.Call) -> bool:
    """``call`` names every argument it passes: no ``*args`` or ``**kwargs`` that could fill
    a parameter it does not name."""
    return not any(isinstance(a, ast.Starred) for a in call.args) and \
        all(k.arg is not None for k in call.keywords)


_STORING = (Place.UNKNOWN, Pin.UNKNOWN)  # a field whose constructions are being judged


class _StoredFields:
    """Where the values stored in a record's field live, by field name: every scanned
    construction of a record class (NamedTuple, dataclass; nested ones too) declaring that
    field, by keyword or position, in the class's module and the modules importing it. A
    builder stores a host tensor in ``ChunkedContext(chunk_seq_lens=...)``; the impl that
    reads ``meta.prefill.chunked_context.chunk_seq_lens`` gets it. Computed per field name
    on first use; constructions that disagree say nothing, one of unknown residence (a field
    passed on from another record) is left out (but makes the pinning unknown)."""

    def __init__(self, index: SourceIndex, config: ScanConfig, facts: Facts,
                 returns: _ReturnPlaces) -> None:
        self.index = index
        self.config = config
        self.facts = facts
        self.returns = returns
        self._models: dict[int, ValueModel] = {}  # a constructing function's locals, once
        self._declared: dict[str, list[tuple[str, int, SourceModule, str]]] | None = None
        self._importers: dict[tuple[str, str], list[SourceModule]] | None = None
        self._calls: dict[int, dict[str, list[tuple[FunctionInfo, ast.Call]]]] = {}
        self._texts: dict[int, str] = {}
        self._built: dict[tuple[str, int, str], list[tuple[FunctionInfo, ast.Call]]] = {}
        self._done: dict[str, tuple[Place, Pin]] = {}

    def __call__(self, name: str) -> tuple[Place, Pin]:
        found = self._done.get(name)
        if found is not None:
            if found is _STORING:
                self.facts.cuts += 1
            return found
        self._done[name] = _STORING  # a field stored from itself
        cuts = self.facts.cuts
        places: set[Place] = set()
        pins: set[Pin] = set()
        for record, position, module, top in self._records().get(name, []):
            for function, call in self._constructions(record, module, top):
                value = keyword(call, name)
                if value is None and position < len(call.args) and not any(
                        isinstance(a, ast.Starred) for a in call.args[:position + 1]):
                    value = call.args[position]
                if value is None or is_none(value):
                    continue
                model = self._models.get(id(function))
                if model is None:
                    model = self._models[id(function)] = ValueModel(self.config, self.facts,
                                                                    self.returns)
                    model.bind_function(function.node, function)
                places.add(model.place(value))
                if len(places - {Place.UNKNOWN}) > 1:
                    found = self._done[name] = (Place.UNKNOWN, Pin.UNKNOWN)
                    return found  # constructions disagree: stop here
                pins.add(model.pin(value))
        places.discard(Place.UNKNOWN)  # a field passed on from another record says nothing
        found = (places.pop() if len(places) == 1 else Place.UNKNOWN,
                 pins.pop() if len(pins) == 1 else Pin.UNKNOWN)
        if keeps(found[0] is Place.UNKNOWN, cuts, self.facts):
            self._done[name] = found
        else:
            del self._done[name]
        return found

    def _records(self) -> dict[str, list[tuple[str, int, SourceModule, str]]]:
        """field name -> (record class, the field's position, its module, the top-level class
        that holds it) for each scanned record class declaring it."""
        if self._declared is None:
            self._declared = {}
            for cls in self.index.classes:
                stack = [cls.node]
                while stack:
                    node = stack.pop()
                    stack.extend(n for n in node.body if isinstance(n, ast.ClassDef))
                    if not is_record(node):
                        continue
                    fields = [item.target.id for item in node.body if isinstance(item, ast.AnnAssign)
                              and isinstance(item.target, ast.Name)]
                    for position, field_name in enumerate(fields):
                        self._declared.setdefault(field_name, []).append(
                            (node.name, position, cls.module, cls.name))
        return self._declared

    def _constructions(self, record: str, module: SourceModule,
                       top: str) -> list[tuple[FunctionInfo, ast.Call]]:
        """``record(...)`` calls in ``module`` and in the modules importing ``top`` from it, and
        its alternate constructors' (looked up once: each field the record declares asks)."""
        key = (record, id(module), top)
        if key in self._built:
            return self._built[key]
        if self._importers is None:
            self._importers = {}
            for other in self.index.modules:
                for source in other.imports.values():
                    self._importers.setdefault(source, []).append(other)
        found = []
        needle = f"{record}("
        for where in dict.fromkeys([module, *self._importers.get((module.name, top), [])]):
            text = self._texts.get(id(where))
            if text is None:
                text = self._texts[id(where)] = "\n".join(where.lines)
            if needle in text:  # most importers only annotate with the record
                found.extend(self._module_calls(where).get(record, []))
        found.extend(self._alternate_constructions(record, module))
        self._built[key] = found
        return found

    def _alternate_constructions(self, record: str,
                                 module: SourceModule) -> list[tuple[FunctionInfo, ast.Call]]:
        """``cls(...)`` in the record's own classmethods: ``SamplingTensors.from_lists`` builds
        the record there, and what it stores is what the sampler reads off it."""
        return [(function, call) for function, call in self._module_calls(module).get("cls", [])
                if function.owner is not None and function.owner.name == record]

    def _module_calls(self, module: SourceModule) -> dict[str, list[tuple[FunctionInfo, ast.Call]]]:
        """Calls in ``module``'s functions and methods, by the called name's last part."""
        calls = self._calls.get(id(module))
        if calls is None:
            calls = self._calls[id(module)] = {}
            functions = [f for f in self.index.functions.values() if f.module is module]
            functions += [m for c in self.index.classes if c.module is module
                          for m in c.methods.values()]
            for function in functions:
                for node in walk(function.node):
                    if isinstance(node, ast.Call) and (node.keywords or node.args):
                        leaf = dotted(node.func).rpartition(".")[2]
                        if leaf:
                            calls.setdefault(leaf, []).append((function, node))
        return calls


def _literals(words: Iterable[str]) -> str:
    """A regular expression matching exactly ``words`` ("" for none) that branches once per
    distinct next character (``A(?:ctive(?:EC|KV)Connector|...)``) instead of trying each word
    in turn: the constructor names of a scan are hundreds."""
    tree: dict = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here

    def emit(node: dict) -> str:
        branches = [re.escape(char) + emit(below) for char, below in sorted(node.items()) if char]
        if not branches or (len(branches) == 1 and "" not in node):
            return "".join(branches)
        return f"(?:{'|'.join(branches)})?" if "" in node else f"(?:{'|'.join(branches)})"

    return emit(tree)


def _is_property(node: ast.AST) -> bool:
    return any(dotted(d).rpartition(".")[2] in ("property", "cached_property")
               for d in getattr(node, "decorator_list", []))


def _module_patches(index: SourceIndex) -> Iterator[tuple[tuple[str, str], SourceModule, str]]:
    """``pkg.module.Name = Local`` at a scanned module's top level: ((``pkg.module``, ``Name``),
    the module, ``Local``)."""
    for module in index.modules:
        for statement in module.tree.body:
            if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Attribute)
                    and isinstance(statement.value, ast.Name)
                    and dotted(statement.targets[0].value)):
                target = statement.targets[0]
                yield (dotted(target.value), target.attr), module, statement.value.id


def _patched_classes(index: SourceIndex) -> dict[tuple[str, str], list[ClassInfo]]:
    """``pkg.module.Name = Local``, ``Local`` a scanned class: objects built as ``Name(...)`` in
    ``pkg.module`` may be ``Local`` (a plugin's patch of vLLM)."""
    found: dict[tuple[str, str], list[ClassInfo]] = {}
    for key, module, local in _module_patches(index):
        cls = index.resolve_class(module, local)
        if cls is not None:
            found.setdefault(key, []).append(cls)
    return found


def _patched_functions(index: SourceIndex) -> dict[tuple[str, str], FunctionInfo]:
    """``vllm.model_executor.layers.fla.ops.chunk_gated_delta_rule = chunk_gated_delta_rule``,
    the value a scanned module function: a call of ``pkg.module.Name`` (imported by name) runs
    the plugin's function, whether or not the scan reads ``pkg.module``. A name two patches
    replace differently is left out."""
    found: dict[tuple[str, str], list[FunctionInfo]] = {}
    for key, module, local in _module_patches(index):
        function = index.resolve_function(module, local)
        if function is not None and function.owner is None:
            found.setdefault(key, []).append(function)
    return {key: fs[0] for key, fs in found.items() if len({id(f) for f in fs}) == 1}


def _custom_ops(index: SourceIndex) -> dict[str, list[FunctionInfo]]:
    """op name -> the scanned functions registered for it at module level
    (``direct_register_custom_op(op_name="gdn_attention", op_func=gdn_attention, ...)``): what
    a layer's ``torch.ops.vllm.gdn_attention(...)`` runs, the compiled graph's way back into
    the layer's own ``_forward``."""
    found: dict[str, list[FunctionInfo]] = {}
    for module in index.modules:
        for statement in module.tree.body:
            call = statement.value if isinstance(statement, ast.Expr) else None
            if not (isinstance(call, ast.Call)
                    and dotted(call.func).rpartition(".")[2] == "direct_register_custom_op"):
                continue
            name = keyword(call, "op_name") or (call.args[0] if call.args else None)
            func = keyword(call, "op_func") or (call.args[1] if len(call.args) > 1 else None)
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)
                    and isinstance(func, ast.Name)):
                continue
            function = index.resolve_function(module, func.id)
            if function is not None and function.owner is None:
                found.setdefault(name.value, []).append(function)
    return found


def _local_value(function: FunctionInfo, value: ast.expr | None) -> ast.expr | None:
    """What a local stored into an attribute was last bound to (``fn = getattr(...)``;
    ``self.fn = fn``), else ``value`` itself."""
    if isinstance(value, ast.Name):
        found = [v for name, v, how, _line in bindings(function.node)
                 if name == value.id and how is None and v is not None]
        return found[-1] if found else value
    return value


def _architectures(value: ast.expr | None) -> set[str]:
    """The architecture names a model factory call passes (``architectures=["A", "B"]``); {""}
    when it passes none as string constants."""
    listed = keyword(value, "architectures") if isinstance(value, ast.Call) else None
    if not isinstance(listed, ast.List | ast.Tuple):
        return {""}
    names = [e.value for e in listed.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return set(names) if names and len(names) == len(listed.elts) else {""}


def _text_config(config: ScanConfig, value: ast.expr | None) -> bool:
    """A model factory call that builds from a composite config's text part:
    ``hf_config=config.text_config``, ``hf_config=config.get_text_config()``."""
    part = keyword(value, "hf_config") if isinstance(value, ast.Call) else None
    if isinstance(part, ast.Call):
        part = part.func
    return isinstance(part, ast.Attribute) and config.text_configs.match(part.attr)


def _model_method(config: ScanConfig, value: ast.expr | None) -> str:
    """``getattr(self.model, "name", ...)``: the model method fetched by name, else ``""``."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "getattr" and len(value.args) >= 2):
        return ""
    owner, name = value.args[0], value.args[1]
    if is_self_attribute(owner) and config.model_receivers.match(owner.attr) \
            and isinstance(name, ast.Constant) and isinstance(name.value, str):
        return name.value
    return ""


def _installed_methods(index: SourceIndex, classes: list[ClassInfo]) -> dict[tuple[int, str], list[str]]:
    """``self.set_custom_postprocess(self.talker_postprocess)`` where the setter (scanned, in
    the class or a base) stores its parameter as ``self.postprocess``: the hook the runner
    calls as ``model.postprocess(...)`` is that method, on the instances that install it."""
    installed: dict[tuple[int, str], list[str]] = {}
    for cls in classes:
        for setter_name, hooks in _hook_calls(cls):
            setter = index.lookup(cls, setter_name)
            if setter is None:
                continue
            params = [a.arg for a in setter.node.args.args[1:]]
            stored = _stored_parameters(setter)
            for position, name in hooks:
                for attr in stored.get(params[position], []) if position < len(params) else []:
                    slot = installed.setdefault((id(cls), attr), [])
                    if name not in slot:
                        slot.append(name)
    return installed


def _hook_calls(cls: ClassInfo) -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """``self.setter(self.method, ...)`` calls in ``cls``'s methods: the setter's name and each
    (argument position, method name) passed as a bound method of ``cls``."""
    for method in cls.methods.values():
        for node in ast.walk(method.node):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and is_self_attribute(node.func):
                hooks = [(i, a.attr) for i, a in enumerate(node.args)
                         if isinstance(a, ast.Attribute) and is_self_attribute(a) and a.attr in cls.methods]
                if hooks:
                    yield node.func.attr, hooks


def _stored_parameters(setter: FunctionInfo) -> dict[str, list[str]]:
    """parameter -> the attributes ``self.attr = parameter`` stores it in, in ``setter``."""
    stored: dict[str, list[str]] = {}
    for node in ast.walk(setter.node):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Attribute) and is_self_attribute(node.targets[0])
                and isinstance(node.value, ast.Name)):
            stored.setdefault(node.value.id, []).append(node.targets[0].attr)
    return stored


def _local_calls(function: ast.AST) -> list[tuple[str, ast.Call]]:
    """``name = Call(...)`` bindings inside a function."""
    return [
        (target.id, node.value)
        for node in walk(function)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        for target in node.targets
        if isinstance(target, ast.Name)
    ]


def _returns_of(function: FunctionNode) -> list[ast.expr]:
    """:func:`_returned_values` of a function's body, kept on its node (each helper's results
    are judged for many calls)."""
    found: list[ast.expr] | None = getattr(function, "_syncgate_returns", None)
    if found is None:
        found = function._syncgate_returns = _returned_values(function.body)  # type: ignore[union-attr]
    return found


def _returned_values(body: list[ast.stmt]) -> list[ast.expr]:
    """Values of the ``return`` statements of one function, not of functions nested in it."""
    found: list[ast.expr] = []
    for node in body:
        if isinstance(node, ast.Return):
            if node.value is not None:
                found.append(node.value)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for field in ("body", "orelse", "finalbody"):
                found.extend(_returned_values(getattr(node, field, []) or []))
            for handler in getattr(node, "handlers", []):
                found.extend(_returned_values(handler.body))
            for case in getattr(node, "cases", []):
                found.extend(_returned_values(case.body))
    return found


def _returned_classes(index: SourceIndex, cls: ClassInfo, getter: str) -> list[ClassInfo]:
    """The scanned classes ``cls.getter()`` returns (``backend.get_impl_cls()``)."""
    method = cls.methods.get(getter)
    if method is None:
        return []
    found = (index.resolve_class(method.module, dotted(v)) for v in _returns_of(method.node))
    return list(dict.fromkeys(c for c in found if c is not None))


def _patched_methods(index: SourceIndex, config: ScanConfig) -> list[tuple[ClassInfo, FunctionInfo]]:
    """``Target.forward = Local.forward`` at a module's top level (also under ``if``/``try``):
    a plugin installs ``Local``'s method on a model class it does not own, so the model's
    forward runs it. Only the ``forward_methods`` count."""
    found: list[tuple[ClassInfo, FunctionInfo]] = []
    for module in index.modules:
        for statement in conditional_statements(module.tree.body, (ast.Assign,), handlers=True):
            if not (len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Attribute)
                    and isinstance(statement.value, ast.Attribute)
                    and config.forward_methods.match(statement.targets[0].attr)):
                continue
            cls = index.resolve_class(module, dotted(statement.value.value))
            method = index.lookup(cls, statement.value.attr) if cls is not None else None
            if cls is not None and method is not None:
                found.append((cls, method))
    return found


def _layer_chosen(index: SourceIndex) -> list[ClassInfo]:
    """Builders a layer picks for its model family by itself: a scanned class's
    ``get_attn_backend()`` returns a backend whose ``get_builder_cls()`` returns the builder
    (Mamba, GDN, linear attention, an indexer): no option chooses them, each step builds them."""
    chosen: list[ClassInfo] = []
    for cls in index.classes:
        getter = cls.methods.get("get_attn_backend")
        if getter is None:
            continue
        for value in _returns_of(getter.node):
            backend = index.resolve_class(cls.module, dotted(value))
            builders = index.lookup(backend, "get_builder_cls") if backend else None
            for built in _returns_of(builders.node) if builders else []:
                builder = index.resolve_class(builders.module, dotted(built))
                if builder is not None and builder not in chosen:
                    chosen.append(builder)
    return chosen


def _annotated_fields(index: SourceIndex) -> dict[str, Place]:
    """Fields that record classes annotate as host data (``req_ids: list[str]``); a name two
    records annotate differently is left to the default (device)."""
    found: dict[str, set[Place]] = {}
    for cls in index.classes:
        if is_record(cls.node):
            for item in cls.node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    place = annotation_place(item.annotation)
                    found.setdefault(item.target.id, set()).add(place)
    return {name: Place.HOST for name, places in found.items() if places == {Place.HOST}}


def _stored(values: ValueModel, passed: ast.expr, field: str) -> ast.expr | None:
    """What a caller stores in ``field`` of the record it passes: ``Meta(field=x)`` built in
    the call or bound once to a local before it."""
    record = passed
    if isinstance(record, ast.Name):
        found = values.bound(record.id)
        record = found[0] if found is not None and found[1] is None else record
    if isinstance(record, ast.Call):
        return keyword(record, field)
    return None


def _tests_host_twin(condition: Condition, site: Site, config: ScanConfig) -> bool:
    """``if meta.seq_lens_cpu is not None: ... else: meta.seq_lens.cpu()``, ``if cu_host is
    None: cu_host = tuple(cu.tolist())``: a read guarded by a None test of its host copy (the
    record's, or a host-named local or parameter named after the value read) is the fallback
    for when that copy is missing."""
    test = condition.source
    if isinstance(test, str):
        return False
    names = tuple(f"{n}_" for n in (site.param, site.field) if n)
    for node in walk(test):
        if not (isinstance(node, ast.Compare) and any(is_none(c) for c in node.comparators)):
            continue
        left = node.left
        if isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name) \
                and left.value.id == site.param and site.field \
                and config.host.match(left.attr.lstrip("_")):
            return True
        if isinstance(left, ast.Name) and names and left.id.startswith(names) \
                and config.host.match(left.id):
            return True
    return False


def _describe(condition: Condition) -> str:
    blocked = condition.blocks
    tag = f" [{blocked.value}]" if blocked is not None else ""
    return f"L{condition.line}: {condition.text}{tag}"


def _int_store(method: FunctionInfo, value: ast.expr | None, depth: int = 0) -> bool:
    """A Python int stored: a literal, ``int(...)`` / ``len(...)``, the method's ``int``
    parameter (``self.token_mel_ratio = token_mel_ratio`` of ``token_mel_ratio: int = 2``; also
    ``int | None``, whose None a conditional has ruled out), arithmetic of such values or of
    members the method stored as such (``self.num_heads // self.num_kv_heads``), or a
    conditional whose branches all are."""
    if depth > 3 or value is None:
        return False
    if isinstance(value, ast.Constant):
        return isinstance(value.value, int) and not isinstance(value.value, bool)
    if isinstance(value, ast.Call):
        return dotted(value.func) in ("int", "len")
    if isinstance(value, ast.Name):
        return optional_int_annotated(method.node, value.id)
    if isinstance(value, ast.BinOp) and isinstance(value.op, _INT_ARITHMETIC):
        return all(_int_store(method, side, depth + 1) for side in (value.left, value.right))
    if isinstance(value, ast.IfExp):
        return all(_int_store(method, side, depth + 1) for side in (value.body, value.orelse))
    if is_self_attribute(value):
        stored = [v for attr, v in member_sets([method.node])
                  if attr == value.attr]  # type: ignore[attr-defined]
        return bool(stored) and all(_int_store(method, v, depth + 1) for v in stored)
    return False


_INT_ARITHMETIC = (ast.FloorDiv, ast.Mult, ast.Add, ast.Sub, ast.Mod)



def _list_valued(index: SourceIndex, cls: ClassInfo, value: ast.expr | None) -> bool:
    """A Python list (:func:`python_list`), or what a method of the class returns when every
    return is one."""
    if python_list(value):
        return True
    name = dotted(value.func) if isinstance(value, ast.Call) else ""
    method = index.lookup(cls, name[5:]) if name.startswith("self.") else None
    returned = _returns_of(method.node) if method is not None else []
    return bool(returned) and all(python_list(r) for r in returned)


def _settle_copies(index: SourceIndex, config: ScanConfig,
                   owned: dict[tuple[int, str], list[Assignment]]) -> dict[int, Assignment]:
    """Stores of unknown residence that copy another slot of the same object take that slot's:
    ``self.seq_lens = self.cache["seq_lens"]`` where the class only ever stores
    ``self.cache["seq_lens"] = self.seq_lens`` after ``self.seq_lens = meta.seq_lens[:n]`` (a
    builder reusing its last build) is a device tensor. A cycle of copies says nothing; any
    other store of unknown residence keeps the slot unknown. Returns the settled assignments
    by the id of the one they replace."""
    classes = {id(c): c for c in index.classes}
    keyed: KeyedStores = {}
    model = ValueModel(config, Facts())

    def places(owner: int, slot: tuple[str, str], seen: frozenset) -> set[Place]:
        if (owner, slot) in seen:
            return set()  # a cycle of copies
        seen = seen | {(owner, slot)}
        found: set[Place] = set()
        if not slot[1]:
            for assignment in owned.get((owner, slot[0]), []):
                inner = self_slot(assignment.value)
                if assignment.place is Place.UNKNOWN and inner is not None:
                    found |= places(owner, inner, seen)
                else:
                    found.add(assignment.place)
            return found
        for function, value in keyed_stores(classes[owner], keyed).get(slot, []):
            inner = self_slot(value)
            if inner is not None:
                found |= places(owner, inner, seen)
            else:
                model.bind_function(function.node, function)
                found.add(model.place(value))
        return found

    settled: dict[int, Assignment] = {}
    for (owner, _attr), group in owned.items():
        for assignment in group:
            slot = self_slot(assignment.value)
            if assignment.place is not Place.UNKNOWN or slot is None or owner not in classes:
                continue
            known = places(owner, slot, frozenset())
            if len(known) == 1 and Place.UNKNOWN not in known:
                settled[id(assignment)] = replace(assignment, place=known.pop())
    return settled


def _attribute_facts(assignments: list[Assignment]) -> Facts:
    """Facts about ``self.<attr>`` that hold for every non-None assignment of that name."""
    by_attr: dict[str, list[Assignment]] = {}
    for assignment in assignments:
        by_attr.setdefault(assignment.attr, []).append(assignment)
    facts = Facts()
    for attr, group in by_attr.items():
        places = {a.place for a in group}
        if len(places) == 1 and Place.UNKNOWN not in places:
            facts.place[attr] = places.pop()
        pins = {a.pin for a in group} - {Pin.UNKNOWN}
        if len(pins) == 1:
            facts.pin[attr] = pins.pop()
        dtypes = {a.dtype for a in group}
        if len(dtypes) == 1 and None not in dtypes:
            facts.dtype[attr] = dtypes.pop()  # type: ignore[assignment]
        kinds = {a.kind for a in group}
        if len(kinds) == 1 and None not in kinds:
            facts.kind[attr] = kinds.pop()
        presence = {_presence(a) for a in group}
        if len(presence) == 1 and None not in presence:
            facts.presence[attr] = presence.pop()
    return facts


def _presence(assignment: Assignment) -> tuple[bool, str] | None:
    """(present in the protected configuration?, category): absent when any condition around
    it is False there (a True one, such as a default graph mode, keeps looking), present when
    the decided ones are all True."""
    decided = [c.truth for c in assignment.conditions
               if c.truth.value is not None and c.truth.guard is not None]
    absent = next((t for t in decided if t.value is False), None)
    first = absent or (decided[0] if decided else None)
    return (first.value, first.guard.value) if first is not None and first.guard else None

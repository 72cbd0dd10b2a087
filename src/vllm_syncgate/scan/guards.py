"""Whether a branch runs in the configuration the gate protects, and if not, what skips it.

The gate protects the decode loop of a warmed-up server in its default mode: no speculation and
async scheduling off. A guard category means "runs only when X is on", so a condition is
evaluated in three-valued logic with every mode name falsy: ``self.speculator is not None`` is
False, ``num_spec_tokens > 0`` is False, ``self.use_async_scheduling`` is False (a sync under
``not use_async_scheduling`` runs by default and is not guarded), warm-up names are False, and a
name that is 1 without drafts (``max_gen_len``) compares equal to 1; everything else is unknown.
A branch whose condition is False there is guarded, and the name that made it False gives the
guard's category. Unknown conditions guard nothing: a sync behind ``if logprobs is not None``
still runs on some decode steps. By-design waits pass through allow-lists, never through a guard.
"""

from __future__ import annotations

import ast
import enum
import fnmatch
import importlib.util
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from vllm_syncgate.scan.config import ScanConfig
from vllm_syncgate.scan.sources import ClassInfo, class_mro, dotted, is_self_attribute, walk
from vllm_syncgate.scan.values import (
    Facts,
    bindings,
    is_none,
    is_true,
    keyword,
    makes_tensor,
    member_sets,
    owned,
)

# A config field that is off unless a user turns it on: ``enable_x: bool = False``, or
# ``watermark_config: WatermarkConfig | None = None`` (a feature's config, absent by default)
_OFF_FIELD = re.compile(r"^\s+(\w+): bool = False\b|^\s+(\w+_config): [\w.\[\]\"]+ \| None = None\b",
                        re.M)


# An environment variable ``envs.py`` leaves unset unless a user sets it: ``VLLM_X_DIR: str |
# None = None`` (its getter is ``os.getenv("VLLM_X_DIR")``), ``VLLM_X: str = ""``
_OFF_ENV = re.compile(r'^\s+(\w+): [\w.\[\]"]+ \| None = None\b|^\s+(\w+): str = ""', re.M)


# A switch whose off value is no bool: ``mamba_cache_mode: MambaCacheMode = "none"``,
# ``max_items: int = 0``, ``mode: Mode = Mode.NONE`` (a value that is resolved at run time,
# such as "auto" or "", says nothing about the default mode and is not read)
_OFF_VALUE = re.compile(r'^\s+([a-zA-Z]\w*): [^=\n]+ = ("(?:none|off|disabled)"|0|\w+\.'
                        r'(?:NONE|OFF|DISABLED))\s*(?:#.*)?$', re.M)
# The default graph mode: the optimization level a config starts from, and its cudagraph_mode
_LEVEL = re.compile(r"optimization_level: \w+ = \w+\.O(\d)")
_GRAPH_MODE = re.compile(r'"cudagraph_mode": \w+\.(\w+)')


# A feature a config turns off by default with a ``disable_x`` switch: ``disable_cascade_attn:
# bool = True`` (vLLM 0.18+): ``not model_config.disable_cascade_attn`` is false by default
_DISABLED_FIELD = re.compile(r"^\s+(disable_\w+): bool = True\b", re.M)


def tree_config_sources(paths: Sequence[str]) -> tuple[str, ...]:
    """The config modules (``vllm/config/*.py`` or the older ``vllm/config.py``, with
    ``vllm/envs.py``) of the vLLM tree a scanned path lies in: a release is judged by its own
    defaults (cascade attention is on by default up to 0.17, opt-in from 0.18), not by the
    installed vLLM's. Empty when no scanned path is inside a vLLM tree with a config."""
    for path in paths:
        here = Path(path).resolve()
        for folder in (here, *here.parents):
            if folder.name != "vllm":
                continue
            config = [*sorted((folder / "config").glob("*.py")), folder / "config.py"]
            files = [f for f in (*config, folder / "envs.py") if f.is_file()]
            if any(f.name != "envs.py" for f in files):
                return tuple(str(f) for f in files)
    return ()


def config_overrides(hooks: Sequence[ast.AST]) -> tuple[tuple[str, bool], ...]:
    """``(field, value)`` for each bool a platform's config hook stores in a config field
    (``vllm_config.model_config.disable_cascade_attn = True``) outside any branch but a test that
    the config is there (``if vllm_config.model_config is not None:``): what that platform runs
    with, whatever the config class defaults to. A field two hooks force differently is left
    out."""
    found: dict[str, set[bool]] = {}

    def visit(statements: list[ast.stmt]) -> None:
        for statement in statements:
            if isinstance(statement, ast.If) and _config_present(statement.test):
                visit(statement.body)
            elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant) \
                    and isinstance(statement.value.value, bool):
                for target in statement.targets:
                    chain = _chain(target) if isinstance(target, ast.Attribute) else []
                    if len(chain) >= 2 and chain[-2].endswith("config"):
                        found.setdefault(chain[-1], set()).add(statement.value.value)

    for hook in hooks:
        visit(getattr(hook, "body", []))
    return tuple(sorted((name, values.pop()) for name, values in found.items()
                        if len(values) == 1))


def _config_present(test: ast.expr) -> bool:
    """``if cfg.model_config is not None:`` / ``if model_config:``: the config is there."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) \
            and is_none(test.comparators[0]):
        test = test.left
    return isinstance(test, ast.Name | ast.Attribute) and _chain(test)[-1].endswith("config")


@cache
def _config_texts(sources: tuple[str, ...] = ()) -> tuple[tuple[str, str], ...]:
    """(file name, text) of the config modules and ``envs.py`` of the scanned tree
    (``sources``), else of the installed vLLM, read as text: vLLM is located, never imported."""
    files = [Path(s) for s in sources]
    if not files:
        spec = importlib.util.find_spec("vllm")
        if spec is None or not spec.submodule_search_locations:
            return ()
        root = Path(next(iter(spec.submodule_search_locations)))
        files = [*sorted((root / "config").glob("*.py")), root / "envs.py"]
    texts = []
    for file in files:
        try:
            texts.append((file.name, file.read_text(encoding="utf-8")))
        except OSError:
            continue
    return tuple(texts)


@cache
def installed_opt_ins(sources: tuple[str, ...] = ()) -> frozenset[str]:
    """Switches the config classes and ``envs.py`` default to off (the scanned tree's,
    ``sources``, else the installed vLLM's): ``if self.model_config.enable_x:`` is an opt-in
    feature even when no name list mentions it yet, and so is ``if envs.VLLM_X_DIR:`` for a
    variable ``envs.py`` leaves unset."""
    found: set[str] = set()
    for name, text in _config_texts(sources):
        for match in _OFF_FIELD.finditer(text):
            found.add(match.group(1) or match.group(2))
        if name == "envs.py":
            found.update(m.group(1) or m.group(2) for m in _OFF_ENV.finditer(text))
    return frozenset(found)


@cache
def disabled_features(sources: tuple[str, ...] = ()) -> frozenset[str]:
    """``disable_x`` switches the config defaults to True: feature x is opt-in."""
    return frozenset(m.group(1) for _name, text in _config_texts(sources)
                     for m in _DISABLED_FIELD.finditer(text))


@cache
def installed_defaults(sources: tuple[str, ...] = ()) -> dict[str, str | int]:
    """Switches whose default is off but no bool, with that default (``"none"``, ``0``, the
    enum member's name); a name two config classes default differently is left out."""
    found: dict[str, set[str | int]] = {}
    for name, text in _config_texts(sources):
        if name == "envs.py":
            continue  # its annotations are for type checkers; the defaults are in its getters
        for match in _OFF_VALUE.finditer(text):
            if match.group(1).endswith(("rank", "seed")):
                continue  # an index or a seed: 0 is a value, not "off"
            raw = match.group(2)
            value: str | int = 0 if raw == "0" else raw.strip('"').rpartition(".")[2]
            found.setdefault(match.group(1), set()).add(value)
    return {name: values.pop() for name, values in found.items() if len(values) == 1}


@cache
def installed_graph_mode(sources: tuple[str, ...] = ()) -> str | None:
    """The graph mode a server runs with unless a user picks another (``FULL_AND_PIECEWISE``
    in vLLM 0.32): the ``cudagraph_mode`` of the default optimization level (the installed
    vLLM's where the scanned tree's config has none)."""
    texts = dict(_config_texts(sources))
    text = texts.get("vllm.py", "")
    level = _LEVEL.search(text)
    if level is None:
        return installed_graph_mode() if sources else None
    start = text.find(f"OPTIMIZATION_LEVEL_0{level.group(1)} = {{")
    mode = _GRAPH_MODE.search(text, start) if start >= 0 else None
    return mode.group(1) if mode else None


class Guard(str, enum.Enum):
    """What keeps a sync off the protected path; ordered from weakest to strongest."""

    NONE = "none"
    UNKNOWN_RESIDENCE = "unknown_residence"  # a readback of a value nothing says is on the device
    ALLOWED = "allowed"
    OPT_IN = "opt_in"  # an opt-in feature or deployment (pooling, data parallel, timing, ...)
    WARMUP = "warmup"
    ASYNC_SCHEDULING = "async_scheduling"
    SPECULATION = "speculation"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def __str__(self) -> str:
        return self.value


_RANK = {g: i for i, g in enumerate(Guard)}


@dataclass(frozen=True)
class Truth:
    """A three-valued truth (None = unknown) and the category of the name that decided it."""

    value: bool | None
    guard: Guard | None = None

    def negate(self) -> Truth:
        return Truth(None if self.value is None else not self.value, self.guard)


UNKNOWN = Truth(None)
_TRUTHY_OPS = (ast.IsNot, ast.NotEq, ast.Gt)
_FALSY_OPS = (ast.Is, ast.Eq, ast.LtE)


@dataclass(frozen=True)
class Condition:
    """One enclosing condition of a site or call: its source, and how it evaluates."""

    source: ast.expr | str  # the test (unparsed only when reported), or a ready description
    positive: bool
    truth: Truth
    line: int

    @property
    def text(self) -> str:
        if isinstance(self.source, str):
            return self.source
        if self.positive:
            return ast.unparse(self.source)
        if isinstance(self.source, ast.UnaryOp) and isinstance(self.source.op, ast.Not):
            return ast.unparse(self.source.operand)
        return f"not ({ast.unparse(self.source)})"

    @property
    def blocks(self) -> Guard | None:
        """The guard category when this condition is False in the protected configuration."""
        return self.truth.guard if self.truth.value is False else None


class GuardEvaluator:
    def __init__(self, config: ScanConfig, facts: Facts) -> None:
        self.config = config
        self.facts = facts
        self._function: ast.AST | None = None
        self._flags: dict[str, ast.expr] = {}
        self._reading: set[str] = set()
        self._scope: ast.AST | None = None
        self._family_off: set[str] = set()
        self._owner: ClassInfo | None = None
        sources = config.config_sources
        self.opt_ins = installed_opt_ins(sources)
        self.disabled = disabled_features(sources)
        if config.config_overrides:  # what a scanned platform forces wins over the defaults
            forced = dict(config.config_overrides)
            self.opt_ins = (self.opt_ins - set(forced)) | {
                f for f, on in forced.items() if not on and not f.startswith("disable_")}
            self.disabled = (self.disabled - set(forced)) | {
                f for f, on in forced.items() if on and f.startswith("disable_")}
        self.defaults = installed_defaults(sources)
        self.graph_mode = installed_graph_mode(sources)

    def bind_function(self, node: ast.AST, owner: ClassInfo | None = None) -> None:
        """Local flags (``needs_sync = a and not b``) are looked up on first use; ``owner``
        (the method's class) decides its model family's switches (``[guards] family_off``) and
        the switches it hard-wires off."""
        self._function, self._flags, self._scope, self._owner = node, {}, node, owner
        name = owner.name if owner is not None else ""
        self._family_off = {switch for entry in self.config.family_off
                            for glob, _, switch in [entry.partition("=")]
                            if name and fnmatch.fnmatchcase(name, glob)}

    def _flag(self, name: str) -> ast.expr | None:
        """The value of a local bound exactly once, so ``if needs_sync:`` reads through it."""
        if self._function is not None:
            found = getattr(self._function, "_syncgate_flags", None)
            if found is None:  # kept on the node: each function is walked more than once
                counts: dict[str, int] = {}
                values: dict[str, ast.expr] = {}
                for local, value, how, _line in bindings(self._function):
                    counts[local] = counts.get(local, 0) + 1
                    if how is None and value is not None:
                        values[local] = value
                found = {k: v for k, v in values.items() if counts[k] == 1}
                self._function._syncgate_flags = found  # type: ignore[attr-defined]
            self._flags, self._function = found, None
        return self._flags.get(name)

    def _memoized(self, name: str) -> bool:
        """A local first read from a cache (``X_CACHE.get(key)``, ``self._cache.get(key)``): it
        is None on the first use only, so what builds it then runs once, not per step."""
        if self._scope is None:
            return False
        firsts = getattr(self._scope, "_syncgate_firsts", None)
        if firsts is None:  # kept on the node: each local's first plain binding (source order)
            firsts = {}
            for local, value, how, _line in bindings(self._scope):  # type: ignore[arg-type]
                if how is None:
                    firsts.setdefault(local, value)
            self._scope._syncgate_firsts = firsts  # type: ignore[attr-defined]
        first = firsts.get(name)
        if not (isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute)):
            return False
        return first.func.attr == "get" and "cache" in dotted(first.func.value).lower()

    def _fills(self, node: ast.expr) -> bool:
        """``self.attr`` in ``if self.attr is None: self.attr = build()`` of this function, or
        ``if self.attr is None: self._build()`` where that method of the class builds it: a
        member built on first use and reused after (not an ``is not None`` early return)."""
        return is_self_attribute(node) and node.attr in self._first_use()[0]  # type: ignore[attr-defined]

    def _set_once(self, node: ast.expr) -> bool:
        """``self.done`` in ``if not self.done: self.done = True; ...``: a block the flag lets
        run once per process (a one-time log of codec statistics), not on every step."""
        return is_self_attribute(node) and node.attr in self._first_use()[1]  # type: ignore[attr-defined]

    def _first_use(self) -> tuple[frozenset[str], frozenset[str]]:
        if self._scope is None:
            return frozenset(), frozenset()
        kept = getattr(self._scope, "_syncgate_first_use", None)
        if kept is None:  # kept on the node, by class: some walks bind no class
            kept = self._scope._syncgate_first_use = {}  # type: ignore[attr-defined]
        key = id(self._owner)
        if key not in kept:
            kept[key] = _first_use_members(self._scope, self._owner)
        return kept[key]

    def _rebuilt_on_change(self, test: ast.BoolOp) -> bool:
        """``self.mask is None or self.mask.dtype != dtype``: a member built on first use and
        built again only when a property of its own differs from the call's (the dtype, the
        device a model keeps for its life): the first use, as ``self.mask is None``."""
        first = test.values[0]
        if not (isinstance(test.op, ast.Or) and isinstance(first, ast.Compare)
                and isinstance(first.ops[0], ast.Is) and is_none(first.comparators[0])
                and self._fills(first.left)):
            return False
        member = _chain(first.left)
        return all(isinstance(v, ast.Compare) and len(v.ops) == 1
                   and isinstance(v.ops[0], ast.NotEq)
                   and _chain(v.left)[:len(member)] == member and len(_chain(v.left)) > len(member)
                   and _chain(v.left)[-1] in ("dtype", "device")
                   for v in test.values[1:])

    def evaluate(self, test: ast.expr) -> Truth:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.evaluate(test.operand).negate()
        if isinstance(test, ast.BoolOp) and self._rebuilt_on_change(test):
            return self.evaluate(test.values[0])
        if isinstance(test, ast.BoolOp):
            parts = [self.evaluate(v) for v in test.values]
            decisive = isinstance(test.op, ast.And) is False  # Or: any True decides
            hits = [p for p in parts if p.value is decisive]
            if hits:
                return _strongest(hits)
            if all(p.value is (not decisive) for p in parts):
                return _strongest(parts)
            return UNKNOWN
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return self._compare(test.left, test.ops[0], test.comparators[0])
        return self.atom(test)

    def _compare(self, left: ast.expr, op: ast.cmpop, right: ast.expr) -> Truth:
        environment = _environment_compare(left, op, right, self.config.environment_set)
        if environment is not None:
            return environment
        if _chain(left)[-2:] == ["device", "type"] and isinstance(right, ast.Constant) \
                and right.value == "cpu" and isinstance(op, ast.Eq | ast.NotEq):
            # x.device.type == "cpu": a host-only branch, never the accelerator's step
            return Truth(isinstance(op, ast.NotEq), Guard.OPT_IN)
        single = self._single(left) if isinstance(right, ast.Constant) and right.value == 1 else None
        if single is not None:
            # max_gen_len == 1 without drafts, dp_size == 1 without data parallelism
            if isinstance(op, ast.Eq | ast.LtE):
                return Truth(True, single)
            if isinstance(op, ast.NotEq | ast.Gt):
                return Truth(False, single)
        if is_none(right) and isinstance(op, ast.Is | ast.IsNot) and self._fills(left):
            # if self.mask is None: self.mask = build(): built on first use, then reused
            return Truth(isinstance(op, ast.IsNot), Guard.WARMUP)
        member = _chain(right)
        if len(member) > 1 and self.config.opt_in.match(member[-1]) and isinstance(
                op, ast.Eq | ast.NotEq):
            # attn_type == AttentionType.ENCODER_ONLY: a mode only an opt-in feature selects
            return Truth(isinstance(op, ast.NotEq), Guard.OPT_IN)
        decided = self._graph_mode(left, op, right)
        if decided is None:
            decided = self._switch(left, op, right)
        if decided is not None:
            return decided
        subject = self.atom(left)
        if subject.value is None:
            return UNKNOWN
        zero = is_none(right) or (isinstance(right, ast.Constant) and right.value in (0, False))
        if zero and isinstance(op, _TRUTHY_OPS):
            return subject
        if zero and isinstance(op, _FALSY_OPS):
            return subject.negate()
        if isinstance(right, ast.Constant) and right.value == 1 and isinstance(op, ast.GtE):
            return subject
        numeric = isinstance(right, ast.Constant) and isinstance(right.value, int | float)
        if subject.guard is Guard.SPECULATION and subject.value is False and not numeric:
            # spec_config.method == "eagle": without speculation there is no config to match
            return subject
        if subject.guard is Guard.OPT_IN and subject.value is False and isinstance(
                right, ast.Constant) and right.value and isinstance(op, ast.Eq | ast.NotEq):
            # enable_x == 1: a switch that is off equals no "on" value
            return subject if isinstance(op, ast.Eq) else subject.negate()
        return UNKNOWN

    def atom(self, node: ast.expr) -> Truth:
        """Truthiness of a name, attribute chain or call in the protected configuration."""
        known, value = environment_default(node, self.config.environment_set)
        if known:  # os.environ.get("X_DUMP_DIR"): no such variable is set by default
            return Truth(bool(value), Guard.OPT_IN)
        if is_none(node):
            return Truth(False)  # os.environ.get("X") or None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "isinstance" and self._settled_tensor(
                    node):
                # x = y.to(device=d, dtype=t); if not isinstance(x, torch.Tensor): dead code
                return Truth(True, Guard.OPT_IN)
            if _debug_logging(node):
                # logger.isEnabledFor(logging.DEBUG): a server starts at INFO
                return Truth(False, Guard.OPT_IN)
            if isinstance(func, ast.Name) and func.id in ("isinstance", "hasattr", "getattr",
                                                          "bool", "len"):
                return self.atom(node.args[0]) if node.args else UNKNOWN
            return self.atom(func)
        names = _chain(node)
        if not names:
            return UNKNOWN
        if isinstance(node, ast.Name) and self._memoized(node.id):
            # tables = _TABLE_CACHE.get(device); if tables is None: build once
            return Truth(True, Guard.WARMUP)
        if isinstance(node, ast.Name) and not self._matches(node.id):
            flag = self._flag(node.id)
            if flag is not None and node.id not in self._reading:
                self._reading.add(node.id)  # a = b; b = a must not loop
                try:
                    return self.evaluate(flag)
                finally:
                    self._reading.discard(node.id)
        if self._set_once(node):
            # if not self._logged: self._logged = True; ...: true after the first step
            return Truth(True, Guard.WARMUP)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in self.facts.presence
        ):
            present, category = self.facts.presence[node.attr]
            return Truth(present, Guard(category))
        for name in names:
            if self.config.speculation.match(name):
                return Truth(False, Guard.SPECULATION)
            if self.config.warmup.match(name):
                return Truth(False, Guard.WARMUP)
            if self.config.opt_in.match(name):
                return Truth(False, Guard.OPT_IN)
        if self.config.async_scheduling.match(names[-1]):
            return Truth(False, Guard.ASYNC_SCHEDULING)
        if len(names) > 1 and (names[-1] in self.opt_ins or names[-1] in self._family_off):
            return Truth(False, Guard.OPT_IN)  # a switch the installed vLLM defaults to off
        if len(names) > 1 and names[-1] in self.disabled:
            return Truth(True, Guard.OPT_IN)  # disable_x = True: feature x is opt-in
        if any(self._switched(name) for name in names):
            return Truth(False, Guard.OPT_IN)  # a value only the switch's feature sets
        if len(names) > 1 and self.defaults.get(names[-1]) == 0:
            return Truth(False, Guard.OPT_IN)  # max_items: int = 0
        if len(names) == 2 and names[0] == "self" and owned(self.facts.hard_off, self._owner,
                                                             names[1]):
            # self.chunked_prefill_enabled = False in the class, never set otherwise
            return Truth(False, Guard.OPT_IN)
        return UNKNOWN

    def _settled_tensor(self, test: ast.Call) -> bool:
        """``isinstance(x, torch.Tensor)`` where ``x`` was last bound, unconditionally (in the
        function's own body, not a branch), to a value that is certainly a tensor."""
        if len(test.args) != 2 or not isinstance(test.args[0], ast.Name) or \
                dotted(test.args[1]) not in ("torch.Tensor", "Tensor") or \
                not isinstance(self._scope, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        name = test.args[0].id
        earlier = [line for local, _v, _how, line in bindings(self._scope)
                   if local == name and line < test.lineno]
        if not earlier:
            return False
        return any(isinstance(statement, ast.Assign) and statement.lineno == earlier[-1]
                   and [dotted(t) for t in statement.targets] == [name]
                   and makes_tensor(statement.value) for statement in self._scope.body)

    def _switched(self, name: str) -> str:
        """The config switch whose feature alone sets a value of this name (``[guards]
        switched``: ``common_prefix_len`` only with cascade attention), where the scanned
        tree's config defaults that switch to off; "" otherwise."""
        for entry in self.config.switched:
            switch, _, glob = entry.partition("=")
            off = switch in self.disabled or (not switch.startswith("disable_")
                                              and switch in self.opt_ins)
            if off and fnmatch.fnmatchcase(name, glob):
                return switch
        return ""

    def _graph_mode(self, left: ast.expr, op: ast.cmpop, right: ast.expr) -> Truth | None:
        """``compilation_config.cudagraph_mode == CUDAGraphMode.PIECEWISE``: the config's mode
        is the installed vLLM's default (FULL_AND_PIECEWISE) unless a user picks another, so a
        compare with another member is false by default. A runtime mode (``runtime_mode``,
        the batch's dispatch) is decided per step (FULL for decode batches, PIECEWISE for
        mixed ones): no guard."""
        names = _chain(left) if isinstance(left, ast.Attribute) else []
        if (
            self.graph_mode is None
            or len(names) < 2
            or not names[-1].endswith("graph_mode")
            or "runtime" in names[-1]
            or not names[-2].endswith("config")
            or not isinstance(op, ast.Eq | ast.NotEq)
            or not (isinstance(right, ast.Attribute) and dotted(right.value).endswith("GraphMode"))
        ):
            return None
        same = right.attr == self.graph_mode
        return Truth(same if isinstance(op, ast.Eq) else not same, Guard.OPT_IN)

    def _switch(self, left: ast.expr, op: ast.cmpop, right: ast.expr) -> Truth | None:
        """``cache_config.mamba_cache_mode != "none"``, ``cfg.max_items > 0``: a compare of a
        switch the installed vLLM defaults to off, evaluated at that default."""
        names = _chain(left) if isinstance(left, ast.Attribute) else []
        if len(names) < 2 or names[-1] not in self.defaults:
            return None
        default = self.defaults[names[-1]]
        if isinstance(right, ast.Attribute) and isinstance(default, str):
            value: object = right.attr  # Mode.NONE: the member's name
        elif isinstance(right, ast.Constant) and isinstance(right.value, str | int) and not \
                isinstance(right.value, bool):
            value = right.value
        else:
            return None
        if isinstance(op, ast.Eq | ast.NotEq):
            same = value == default
            return Truth(same if isinstance(op, ast.Eq) else not same, Guard.OPT_IN)
        if isinstance(default, int) and isinstance(value, int):
            compare = {ast.Gt: default > value, ast.GtE: default >= value,
                       ast.Lt: default < value, ast.LtE: default <= value}.get(type(op))
            return None if compare is None else Truth(compare, Guard.OPT_IN)
        return None


    def _matches(self, name: str) -> bool:
        config = self.config
        return (
            config.speculation.match(name)
            or config.warmup.match(name)
            or config.async_scheduling.match(name)
            or config.one_without_speculation.match(name)
            or config.opt_in.match(name)
            or config.one_by_default.match(name)
        )

    def _single(self, node: ast.expr) -> Guard | None:
        """The mode a name leaves when it is not 1 (``max_gen_len``, ``dp_size``), if any; a
        product of such sizes (``dcp_world_size * pcp_world_size``) is 1 when each is."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            sides = [self._single(node.left), self._single(node.right)]
            return None if None in sides else max(sides, key=lambda g: g.rank)  # type: ignore[arg-type,union-attr]
        names = _chain(node) if isinstance(node, ast.Name | ast.Attribute) else []
        if not names:
            return None
        if self.config.one_without_speculation.match(names[-1]):
            return Guard.SPECULATION
        if self.config.one_by_default.match(names[-1]):
            return Guard.OPT_IN
        return None


_ENVIRON = ("os.environ", "environ")
_ENVIRONMENT_READS = frozenset({"os.environ.get", "os.getenv", "environ.get", "getenv"})
_ENVIRONMENT_WRITES = frozenset({"os.environ.setdefault", "environ.setdefault", "os.putenv",
                                 "putenv"})
_COMPARISONS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_,
                ast.IsNot: operator.is_not, ast.In: lambda a, b: a in b,
                ast.NotIn: lambda a, b: a not in b}
_STRING_METHODS = frozenset({"lower", "upper", "strip", "casefold"})
_CONVERSIONS = {"int": int, "float": float, "bool": bool, "str": str}


def environment_default(node: ast.expr, written: frozenset[str]) -> tuple[bool, object]:
    """(True, value) when ``node`` reads an environment variable, with the value it has when
    none is set: the gate protects a default deployment, where debug and dump variables
    (``VLLM_X_DUMP_DIR``) are unset. Follows the default through ``.lower()``/``.strip()`` and
    ``int()``/``bool()``; (False, None) for anything else, a default that is not a literal or a
    variable the scanned tree sets itself (``written``)."""
    if not isinstance(node, ast.Call):
        return False, None
    func = node.func
    if dotted(func) in _ENVIRONMENT_READS:
        if not node.args or not isinstance(node.args[0], ast.Constant) or len(node.args) > 2 \
                or node.args[0].value in written:
            return False, None
        default = node.args[1] if len(node.args) == 2 else keyword(node, "default")
        if default is None:
            return True, None
        return (True, default.value) if isinstance(default, ast.Constant) else (False, None)
    if isinstance(func, ast.Attribute) and func.attr in _STRING_METHODS and not node.args:
        known, value = environment_default(func.value, written)
        if known and isinstance(value, str):
            return True, getattr(value, func.attr)()
        return False, None
    if isinstance(func, ast.Name) and func.id in _CONVERSIONS and len(node.args) == 1:
        known, value = environment_default(node.args[0], written)
        if known and value is not None:
            try:
                return True, _CONVERSIONS[func.id](value)
            except ValueError:
                return False, None
    return False, None


def _environment_compare(left: ast.expr, op: ast.cmpop, right: ast.expr,
                         written: frozenset[str]) -> Truth | None:
    """``os.getenv("X", "0") == "1"``, ``mode in ("a", "b")``, ``"X" in os.environ``: decided
    by the default of the variable; None when either side is not known."""
    if isinstance(op, ast.In | ast.NotIn) and dotted(right) in _ENVIRON and \
            isinstance(left, ast.Constant) and left.value not in written:
        return Truth(isinstance(op, ast.NotIn), Guard.OPT_IN)
    known, value = environment_default(left, written)
    if not known:
        return None
    try:
        other = ast.literal_eval(right)
    except (ValueError, TypeError, SyntaxError):
        return None
    compare = _COMPARISONS.get(type(op))
    if compare is None:
        return None
    try:
        return Truth(bool(compare(value, other)), Guard.OPT_IN)
    except TypeError:
        return None


def environment_writes(trees: Iterable[ast.Module]) -> frozenset[str]:
    """Variables a scanned module sets itself (``os.environ["X"] = "1"`` in a platform module,
    ``os.environ.setdefault``, ``os.putenv``): they are not unset in a default deployment."""
    found = set()
    for tree in trees:
        for node in walk(tree):
            key: ast.expr | None = None
            if isinstance(node, ast.Assign):
                key = next((t.slice for t in node.targets if isinstance(t, ast.Subscript)
                            and dotted(t.value) in _ENVIRON), None)
            elif isinstance(node, ast.Call) and node.args and \
                    dotted(node.func) in _ENVIRONMENT_WRITES:
                key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                found.add(key.value)
    return frozenset(found)


def _debug_logging(call: ast.Call) -> bool:
    """``logger.isEnabledFor(logging.DEBUG)`` (or ``DEBUG``, or 10): false unless a user lowers
    the log level, which vLLM starts at INFO (``VLLM_LOGGING_LEVEL``)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "isEnabledFor" and call.args):
        return False
    level = call.args[0]
    return dotted(level).rpartition(".")[2] == "DEBUG" or (
        isinstance(level, ast.Constant) and level.value == 10)


def _strongest(parts: list[Truth]) -> Truth:
    guarded = [p for p in parts if p.guard is not None]
    if not guarded:
        return parts[0]
    return max(guarded, key=lambda p: p.guard.rank if p.guard else -1)


def _set_back(cls: ClassInfo) -> frozenset[str]:
    """Members a method of the class other than ``__init__`` sets to None, False or 0."""
    found = getattr(cls.node, "_syncgate_set_back", None)
    if found is None:  # kept on the class node
        found = frozenset(attr for name, method in cls.methods.items() if name != "__init__"
                          for attr, value in member_sets([method.node])
                          if isinstance(value, ast.Constant) and not value.value)
        cls.node._syncgate_set_back = found  # type: ignore[attr-defined]
    return found


def _set_after_init(cls: ClassInfo) -> frozenset[str]:
    """Members a method of the class other than ``__init__`` assigns, to any value."""
    found = getattr(cls.node, "_syncgate_set_after_init", None)
    if found is None:  # kept on the class node
        found = frozenset(
            target.attr for name, method in cls.methods.items() if name != "__init__"
            for node in walk(method.node) if isinstance(node, ast.Assign | ast.AnnAssign)
            for root in (node.targets if isinstance(node, ast.Assign) else [node.target])
            for target in walk(root) if is_self_attribute(target))
        cls.node._syncgate_set_after_init = found  # type: ignore[attr-defined]
    return found


def contradictory(conditions: Iterable[Condition], owner: ClassInfo) -> bool:
    """The conditions demand that a member be None and not None at once (``if self.t is None:
    self._init()``, where ``_init`` begins ``if self.t is None: return``), and only ``__init__``
    assigns that member, so nothing between the two tests changes it: no run takes that route."""
    changing = {attr for cls in class_mro(owner) for attr in _set_after_init(cls)}
    demanded: dict[str, bool] = {}
    for condition in conditions:
        if isinstance(condition.source, str):
            continue
        for (member, attr), none in _none_tests(condition.source, condition.positive).items():
            if member and attr not in changing and demanded.setdefault(attr, none) != none:
                return True
    return False


def parameter_none_tests(conditions: Iterable[Condition]) -> dict[str, tuple[bool, int]]:
    """Plain names the conditions test against None -> (whether they demand None, the line of
    the first such test): ``if max_len is None:`` demands None (a parameter's fallback, which
    runs only for a caller that leaves it out), ``if embeddings is not None:`` demands a value
    (a branch a caller that leaves it out never takes)."""
    found: dict[str, tuple[bool, int]] = {}
    for condition in conditions:
        if isinstance(condition.source, str):
            continue
        for (member, name), none in _none_tests(condition.source, condition.positive).items():
            if not member:
                found.setdefault(name, (none, condition.line))
    return found


def _none_tests(test: ast.expr, positive: bool) -> dict[tuple[bool, str], bool]:
    """(is a member of self, name) -> whether it is None, as ``test`` holding (``positive``) or
    failing demands: ``self.t is None``, ``t is not None``, through ``not`` and the parts of an
    ``and`` that holds or an ``or`` that fails."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _none_tests(test.operand, not positive)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if positive else ast.Or):
        parts: dict[tuple[bool, str], bool] = {}
        for value in test.values:
            for key, none in _none_tests(value, positive).items():
                if parts.setdefault(key, none) != none:
                    return {}  # a test that never holds says nothing here
        return parts
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Is | ast.IsNot) and is_none(test.comparators[0])):
        return {}
    none = positive == isinstance(test.ops[0], ast.Is)
    if is_self_attribute(test.left):
        return {(True, test.left.attr): none}  # type: ignore[attr-defined]
    if isinstance(test.left, ast.Name):
        return {(False, test.left.id): none}
    return {}


def _method(chain: list[ClassInfo], name: str) -> ast.AST | None:
    return next((cls.methods[name].node for cls in chain if name in cls.methods), None)


def _first_use_members(scope: ast.AST, owner: ClassInfo | None
                       ) -> tuple[frozenset[str], frozenset[str]]:
    """(members built on first use, one-time flags) of a function.

    Built: ``if self.x is None:`` whose branch gives ``self.x`` a value, itself or through a
    method of the class it calls (``self._build_x()``). Flag: ``if not self.done:`` whose branch
    sets ``self.done = True``, itself or through such a method. Either way the branch runs once
    per process. A member that some method other than ``__init__`` sets back (``self.x =
    None``, ``self.done = False``) may run again: it is no flag, and a method's assignment does
    not build it."""
    chain = class_mro(owner) if owner is not None else []
    reset: set[str] | None = None  # walked only when a branch builds or sets a tested member
    built: set[str] = set()
    flags: set[str] = set()
    for branch in walk(scope):
        if not isinstance(branch, ast.If):
            continue
        unbuilt = {c.left.attr for c in walk(branch.test)
                   if isinstance(c, ast.Compare) and isinstance(c.ops[0], ast.Is)
                   and isinstance(c.left, ast.Attribute) and is_none(c.comparators[0])}
        unset = {n.operand.attr for n in walk(branch.test) if isinstance(n, ast.UnaryOp)
                 and isinstance(n.op, ast.Not) and is_self_attribute(n.operand)}
        if not (unbuilt or unset):
            continue
        own = member_sets(branch.body)
        called = [method for root in branch.body for call in walk(root)
                  if isinstance(call, ast.Call) and is_self_attribute(call.func)
                  for method in [_method(chain, call.func.attr)] if method is not None]
        through = member_sets(called)
        built |= {attr for attr, value in own if attr in unbuilt and not is_none(value)}
        built_through = {attr for attr, value in through if attr in unbuilt and not is_none(value)}
        set_true = {attr for attr, value in [*own, *through] if attr in unset and is_true(value)}
        if built_through or set_true:
            if reset is None:
                reset = {attr for cls in chain for attr in _set_back(cls)}
            built |= built_through - reset
            flags |= set_true - reset
    return frozenset(built), frozenset(flags)


def _chain(node: ast.expr) -> list[str]:
    """Identifiers of ``a.b[c].d`` -> ``[a, b, d]``; empty for anything else."""
    names: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Name):
            names.append(node.id)
            return list(reversed(names))
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return list(reversed(names))

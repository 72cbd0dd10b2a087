"""The sync rules, applied to one function body with its enclosing conditions.

Walks a function once and returns its sync sites and its outgoing calls, each with the stack of
conditions (``if``/``elif``/``else``, early returns, ``x if c else y``, ``a and f()``) around it.
The call graph combines them; nothing here follows calls. Why each rule blocks, as measured on an
H200 (../shared/reference/gpu-physics.md §1, "GP" below):

- ``X.synchronize()``: ``torch.{cuda,npu,xpu,accelerator}.synchronize()`` is ``device_sync``;
  on a stream (``current_stream()``, a ``Stream(...)``, a name with "stream") ``stream_sync``;
  on anything else (events, by construction or name) ``event_sync``. Each waits for queued work
  (GP §1: 7.95-7.97 ms behind an 8 ms kernel).
- ``.tolist() / .item() / .cpu()`` of a value not known to be on the host, and ``int() /
  float() / bool()`` of a value known to be on the device: ``blocking_readback`` (GP §1: ~8 ms).
  ``int(k.max())`` of a helper's parameter (a Python number has no ``.max()``) fails where a
  caller passes a device value. ``max() / min() / any() / all() / sorted()`` of a device tensor
  iterate it and compare elements on the host, each comparison a ``bool()`` readback (GP §1:
  ``bool((x > 3).any())`` 7.98 ms).
- Data-dependent shapes: the operators torch tags ``dynamic_output_shape`` /
  ``data_dependent_output`` (``scan/syncing_ops.toml``, the list the simulated accelerator uses
  too: ``nonzero``, ``unique``, ``masked_select``, ``repeat_interleave`` without ``output_size``,
  ...) and boolean-mask indexing ``x[x > 3]`` of a device value: ``blocking_readback``, because
  the host must read the values to size the output (GP §1: ``torch.nonzero`` 8.00 ms, ``x[x > 3]``
  8.10 ms).
- ``blocking_copy``: device-to-host ``x.to("cpu")`` / ``host.copy_(dev)`` without
  ``non_blocking=True`` (GP §1: 7.97 ms), and with it into memory that is not pinned (GP §1:
  ``pageable.copy_(x, non_blocking=True)`` 7.96 ms, unseen by torch's sync debug mode);
  host-to-device from pageable memory (no ``pin_memory``, ``torch.from_numpy``, the new tensor a
  torch op or arithmetic makes of host tensors: ``torch.cat(parts)``, ``arange(n) * k``),
  ``non_blocking`` or not (``.to(device)``, ``.cuda()``, ``dev.copy_(host)``,
  ``torch.tensor(data, device=dev)``): the driver stages pageable memory through its own pinned
  buffer and the host waits for the copy
  (vLLM's own copy checker flags it; GP §2b: pageable H2D holds 0.80-16.25 ms); a copy between
  host and device that changes the dtype or reads a strided slice of a pinned buffer
  (``pinned[:, 0]``, ``pinned[idx]``): torch first makes a dense, converted temporary in pageable
  memory, so the pinned buffer does not help (GP §3: pageable copies block). So do
  ``x.to(device, dtype=other)`` of a host tensor (converted on the host first), ``pinned[rows]``
  with a list or an array of rows (advanced indexing gathers into a new pageable tensor: the
  synchronous fallback of a host mirror that uploads its dirty rows), and ``x.to(dtype)`` of
  a host tensor, which stays on the host in pageable memory (a mask built with numpy, converted,
  then copied every step).

``with gpu_sync_allowed():`` is recorded on the site (it is reported) but is no guard: vLLM marks
there the syncs its checker accepts, and the scan, like the serve level, lets such a sync pass only
through an allow rule that names its site; a new sync in an existing region fails.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from vllm_syncgate.audit.events import SyncKind
from vllm_syncgate.scan.config import ScanConfig, packaged_table
from vllm_syncgate.scan.guards import Condition, Guard, GuardEvaluator, Truth
from vllm_syncgate.scan.sources import (
    FunctionNode,
    child_fields,
    dotted,
    is_self_attribute,
    walk,
)
from vllm_syncgate.scan.values import (
    Pin,
    Place,
    ValueModel,
    bindings,
    constructed_kind,
    copies_to_host,
    is_none,
    is_true,
    keyword,
    member_sets,
    targets_cpu,
)

_DEVICE_MODULES = ("torch.cuda", "torch.npu", "torch.xpu", "torch.mps", "torch.accelerator",
                   "torch_npu.npu", "torch.cuda.current_device")
# ``.numpy()`` is not one: it raises on a device tensor, so whatever it reads is on the host.
_READBACKS = ("tolist", "item", "cpu")
_SCALARS = ("int", "float", "bool")
# Builtins that iterate a tensor and compare its elements (each comparison is a bool() readback)
_ITERATING = ("max", "min", "any", "all", "sorted")
# Tensor reductions: ``int(k.max())`` is a tensor read back even where ``k`` is a parameter
# (a Python number has no ``.max()``); the callers' arguments say whether it is on the device
_REDUCTIONS = frozenset({"max", "min", "sum", "any", "all", "amax", "amin", "mean", "prod",
                         "argmax", "argmin", "count_nonzero", "norm"})
_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _identity_tests(node: ast.expr) -> bool:
    """A comprehension whose items are ``is`` / ``is not`` tests: Python bools, never tensors."""
    return isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp) and \
        isinstance(node.elt, ast.Compare) and \
        all(isinstance(op, ast.Is | ast.IsNot) for op in node.elt.ops)


@cache
def syncing_ops() -> tuple[frozenset[str], dict[str, str]]:
    """Data-dependent operators and the keyword that sizes each (``scan/syncing_ops.toml``)."""
    table = packaged_table("syncing_ops.toml")
    return frozenset(table["data_dependent"]), dict(table["sized_by"])


_GP = "../shared/reference/gpu-physics.md"
# Why each rule's site blocks the host: (piece of the API label, explanation), first match wins.
_WHY = (
    ("__setitem__(bool mask)", "index_put_ turns the boolean mask into the indices of its true "
                               "elements (nonzero), so the host reads their count first "
                               f"({_GP} §1: torch.nonzero 8.00 ms behind an 8 ms kernel); "
                               "only CUDA fills a Python number with masked_fill_ instead"),
    ("bool mask", f"the result's size depends on device values, so the host reads them first "
                  f"({_GP} §1: x[x > 3] 8.10 ms behind an 8 ms kernel)"),
    ("index upload", "a Python list or array of indices becomes a new tensor in pageable "
                     "host memory, and its copy to the device blocks before the indexing runs "
                     f"({_GP} §3: pageable copies block)"),
    ("from a gather", "indexing with a list or an array of rows gathers them into a new tensor "
                      "in pageable memory, so the pinned buffer does not help and the copy "
                      f"blocks ({_GP} §3: pageable copies block)"),
    ("() of a tensor", "Python iterates the tensor and compares its elements on the host: each "
                       f"comparison reads a device value back ({_GP} §1: bool(...) of a device "
                       "value 7.98 ms behind an 8 ms kernel)"),
    ("strided view", "a strided view is no single DMA: torch stages it through a pageable "
                     f"temporary, and pageable copies block ({_GP} §3)"),
    ("dtype change", "the conversion is made in a pageable temporary on the host first, so the "
                     f"pinned buffer does not help ({_GP} §3: pageable copies block)"),
    ("torch.tensor", "a pageable host tensor is built, then copied: the host waits for the "
                     f"copy ({_GP} §3; vLLM's copy checker flags it)"),
    ("from pageable", "the driver stages pageable memory through its own pinned buffer and "
                      f"returns when the copy is done; non_blocking does not help ({_GP} §3)"),
    ("non_blocking, pageable", f"non_blocking into pageable memory still blocks ({_GP} §1: "
                               "7.96 ms behind an 8 ms kernel; torch's sync debug mode misses it)"),
    ("without non_blocking", "a copy without non_blocking=True returns only when it is done, "
                             "so the host waits for the copy and for the work queued on the "
                             f"stream ahead of it ({_GP} §1: the blocking copies 7.97-7.99 ms "
                             "behind an 8 ms kernel; the same pinned host-to-device copy queued "
                             "with non_blocking=True returns in 0.01 ms)"),
    ("Tensor.copy_", f"a blocking device-to-host copy waits for the stream ({_GP} §1: 7.97 ms)"),
    ("Tensor.to(cpu)", f"a blocking device-to-host copy waits for the stream ({_GP} §1: 7.99 ms)"),
    ("synchronize", f"waits for the work queued before it ({_GP} §1: 7.95-7.97 ms behind an 8 ms "
                    "kernel)"),
    ("Tensor.", f"copies device memory to the host and waits for the stream ({_GP} §1: .tolist() "
                "8.00 ms, .item() 7.97 ms; §2b: other threads' copies wait 15.9 ms meanwhile)"),
    ("()", f"converting a device tensor to a Python value reads it back ({_GP} §1: ~8 ms)"),
)


_DATA_DEPENDENT = (f"the result's size depends on device values, so the host reads them first "
                   f"({_GP} §1: torch.nonzero 8.00 ms behind an 8 ms kernel)")


def explain(api: str) -> str:
    """Why a site of this API label blocks the host, with the measurement behind it."""
    if api.rpartition(".")[2] in syncing_ops()[0]:
        return _DATA_DEPENDENT
    return next((why for piece, why in _WHY if piece in api), "")


@dataclass(frozen=True)
class Site:
    line: int
    kind: SyncKind
    api: str
    conditions: tuple[Condition, ...]
    known: bool = True  # False: a readback of a value whose residence nothing says
    on_self: bool = False  # the value read back is a field of ``self``
    # the parameter the value comes from: the callers' arguments decide its residence
    param: str = ""
    host: bool = False  # the function alone says host (a name, an annotation)
    field: str = ""  # the field of the parameter read (``meta.seq_lens``): the caller's record
    # ``x.to(device=t.device)`` with ``t`` a parameter: the copy goes where the callers' ``t``
    # lives, so it is no upload when every caller passes a host ``t``
    target: str = ""
    # a host-to-device copy: its remedy is a pinned staging buffer, not a deferred readback
    upload: bool = False


@dataclass(frozen=True)
class Call:
    """An outgoing call: ``self.name()``, ``super().name()``, ``name()`` or ``Class()``."""

    how: str  # "self" | "super" | "attr" (self.obj.method()) | "name" | "object" (see below)
    name: str
    conditions: tuple[Condition, ...]
    line: int = 0
    node: ast.Call | None = None  # its arguments are judged only when a callee needs them
    # "object": ``x.method()`` on a value the device computed (``logprobs_tensors.tolists()``),
    # resolved to the one record class (NamedTuple, dataclass) that defines ``method``;
    # "dispatch": ``builder.build()`` on an object whose class is picked at run time, resolved
    # to every scanned class of ``[entries] dispatch_classes``
    load: bool = False  # an attribute read (``buf.uva``): lands only in a property
    # "local": ``session.step()`` on a local or parameter, resolved to ``name`` of each class
    # these build (the callees of its bindings, else the parameter's annotation)
    makers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assignment:
    """A non-None ``self.attr = value``: what the value is, and the conditions around it."""

    attr: str
    place: Place
    pin: Pin
    kind: str | None
    made_by: str  # ``a.B`` for ``self.attr = a.B(...)``: the class the object may be
    conditions: tuple[Condition, ...]
    dtype: str | None = None
    # ``self.forward = self.forward_native``: the method the attribute is bound to
    alias: str = ""
    # the value stored: a copy of another self slot (``self.cache["k"]``) takes its residence
    value: ast.expr | None = None
    # the class its annotation names (``self.svc: Worker | None = get_worker()``)
    annotated: str = ""


@dataclass
class FunctionFacts:
    sites: list[Site]
    calls: list[Call]
    assignments: list[Assignment]


def strongest(conditions: tuple[Condition, ...]) -> Guard:
    """The strongest guard among the conditions that are False in the protected configuration."""
    blocking = [c.blocks for c in conditions if c.blocks is not None]
    return max(blocking, key=lambda g: g.rank) if blocking else Guard.NONE


class FunctionWalker:
    """One pass over a function body; the value model must be bound to that function."""

    def __init__(self, config: ScanConfig, values: ValueModel, guards: GuardEvaluator,
                 properties: frozenset[str] = frozenset()) -> None:
        self.config = config
        self.values = values
        self.guards = guards
        # names of the scanned classes' properties: reading ``self.buf.uva`` runs one
        self.properties = properties
        self._storing: set[int] | None = None
        self.calls_only = False
        self._truths: dict[int, Truth] = {}  # the walk's evaluated tests, by node id

    def walk(self, node: FunctionNode, sites: bool = True, context: object = None,
             calls_only: bool = False, calling: frozenset[str] = frozenset()) -> FunctionFacts:
        """Sites, calls and ``self.`` assignments; ``sites=False`` collects assignments only;
        ``calls_only`` collects only the ``self.``/``self.x.``/``super().``/plain-name calls with
        their conditions, asking the value model nothing (the setter prefilter's walks: the
        residence of the function's locals is not computed for them); with ``calling``, only
        the statements that hold a call of one of those names are walked (the others' calls
        are not wanted; the conditions of early exits still count).

        ``context`` identifies the function for the value model's return-value lookups.
        """
        self.values.bind_function(node, context)
        owner = getattr(context, "owner", None)
        self.guards.bind_function(node, owner)
        self._truths = {}
        self._function = node
        self.facts = FunctionFacts([], [], [])
        self.sites_enabled = sites
        self.calls_only = calls_only
        # collecting assignments only: the statements that store on self (the rest is skipped)
        self._storing = _calling(node, calling) if calls_only and calling else \
            None if sites else _storing(node)
        for decorator in node.decorator_list:
            self._expr(decorator, ())
        self._block(node.body, ())
        return self.facts

    # -- statements ---------------------------------------------------------------------------

    def _condition(self, test: ast.expr, positive: bool) -> Condition:
        truth = self._truths.get(id(test))
        if truth is None:  # an if's test is asked for its body, its else and an early exit
            truth = self._truths[id(test)] = self.guards.evaluate(test)
        return Condition(test, positive, truth if positive else truth.negate(), test.lineno)

    def _block(self, statements: list[ast.stmt], stack: tuple[Condition, ...]) -> None:
        storing = self._storing
        for position, statement in enumerate(statements):
            if storing is None or id(statement) in storing:
                self._statement(statement, stack)
            elif not any(id(later) in storing for later in statements[position + 1 :]):
                return  # nothing left in this block stores on self
            if isinstance(statement, ast.If) and not statement.orelse and _exits(statement.body):
                # early exit: the rest of the block runs only when the test was false
                stack = (*stack, self._condition(statement.test, positive=False))

    def _statement(self, node: ast.stmt, stack: tuple[Condition, ...]) -> None:
        if isinstance(node, ast.If | ast.While):
            self._truth_test(node.test, stack)
        if isinstance(node, ast.If):
            self._expr(node.test, stack)
            self._block(node.body, (*stack, self._condition(node.test, True)))
            self._block(node.orelse, (*stack, self._condition(node.test, False)))
        elif isinstance(node, ast.With | ast.AsyncWith):
            inner = stack
            for item in node.items:
                self._expr(item.context_expr, stack)
                if self._allowed_context(item.context_expr):
                    # recorded, not a guard: only an allow rule naming the site lets it pass
                    text = f"with {ast.unparse(item.context_expr)}"
                    inner = (*inner, Condition(text, True, Truth(None, Guard.ALLOWED), node.lineno))
            self._block(node.body, inner)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                self._expr(decorator, stack)
            self._block(node.body, stack)
        elif isinstance(node, ast.ClassDef):
            return
        else:
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None \
                    and not self.calls_only:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        annotation = node.annotation if isinstance(node, ast.AnnAssign) else None
                        self._assignment(target.attr, node.value, stack, annotation)
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._mask_store(target, node.value, stack)
            for field in ("test", "iter", "value", "targets", "target", "exc", "msg", "subject"):
                child = getattr(node, field, None)
                for expr in child if isinstance(child, list) else [child]:
                    if isinstance(expr, ast.expr):
                        self._expr(expr, stack)
            for field in ("body", "orelse", "finalbody"):
                child = getattr(node, field, None)
                if isinstance(child, list):
                    self._block(child, stack)
            for handler in getattr(node, "handlers", []):
                self._block(handler.body, stack)
            for case in getattr(node, "cases", []):
                self._block(case.body, stack)

    def _assignment(self, attr: str, value: ast.expr, stack: tuple[Condition, ...],
                    annotation: ast.expr | None = None) -> None:
        if is_none(value):
            return
        if isinstance(value, ast.IfExp) and (is_none(value.body) or is_none(value.orelse)):
            # x = Event() if self.use_async_scheduling else None
            stack = (*stack, self._condition(value.test, positive=is_none(value.orelse)))
            value = value.orelse if is_none(value.body) else value.body
        element = value.elt if isinstance(value, ast.ListComp) else (
            value.elts[0] if isinstance(value, ast.List) and value.elts else value)
        # self.tables = [Table(...) for ...]: calls on its items land in Table
        made_by = dotted(element.func) if isinstance(element, ast.Call) else ""
        annotated = element_class(annotation) if annotation is not None else ""
        if not made_by:
            # self.groups: list[list[Group]] = []: calls on its items land in Group
            made_by = annotated
        alias = value.attr if is_self_attribute(value) else ""  # type: ignore[union-attr]
        self.facts.assignments.append(Assignment(
            attr, self.values.place(value), self.values.pin(value), constructed_kind(value),
            made_by, stack, self.values.dtype(value), alias, value, annotated,
        ))

    def _allowed_context(self, node: ast.expr) -> bool:
        if isinstance(node, ast.IfExp):  # nullcontext() if host_side else gpu_sync_allowed()
            return self._allowed_context(node.body) or self._allowed_context(node.orelse)
        target = node.func if isinstance(node, ast.Call) else node
        return self.config.allowed_contexts.match(dotted(target).rpartition(".")[2])

    # -- expressions --------------------------------------------------------------------------

    def _expr(self, node: ast.expr, stack: tuple[Condition, ...]) -> None:
        if not self.sites_enabled or isinstance(node, ast.Name | ast.Constant):
            return  # a leaf holds no call, read or index
        if isinstance(node, ast.IfExp):
            self._truth_test(node.test, stack)
            self._expr(node.test, stack)
            self._expr(node.body, (*stack, self._condition(node.test, True)))
            self._expr(node.orelse, (*stack, self._condition(node.test, False)))
            return
        if isinstance(node, ast.BoolOp):
            positive = isinstance(node.op, ast.And)
            inner = stack
            for value in node.values:
                self._expr(value, inner)
                inner = (*inner, self._condition(value, positive))
            return
        if isinstance(node, ast.Call):
            self._call(node, stack)
        elif self.calls_only:
            pass
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in self.properties
            and (chain := self._self_chain(node.value, 0, links=1)) is not None
        ):
            # buf.uva where buf is an item of self._bufs: the property's body runs here
            self.facts.calls.append(Call("chain", ".".join([*chain, node.attr]), stack,
                                         node.lineno, None, load=True))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and self._is_mask(node.slice)
        ):
            self._mask_read(node, stack)
        elif isinstance(node, ast.Subscript):
            bounds = [b for p in _index_parts(node) if isinstance(p, ast.Slice)
                      for b in (p.lower, p.upper, p.step) if b is not None]
            self._index_scalars(bounds, "slice bound", stack)
            self._list_index(node, stack)
        for field in child_fields(type(node)):  # iter_child_nodes without generators (hot)
            value = getattr(node, field, None)
            for child in value if isinstance(value, list) else (value,):
                if isinstance(child, ast.expr):
                    self._expr(child, stack)
                elif isinstance(child, ast.comprehension):
                    self._expr(child.iter, stack)
                    for condition in child.ifs:
                        self._expr(condition, stack)
                elif isinstance(child, ast.keyword):
                    self._expr(child.value, stack)

    def _mask_store(self, target: ast.expr, value: ast.expr,
                    stack: tuple[Condition, ...]) -> None:
        """``x[mask] = v``, ``x[~done, ...] = 0``: ``index_put_`` turns a boolean mask into the
        indices of its true elements (``nonzero``), whose count the host reads back before it
        can size them, when the mask or ``x`` is on the device. CUDA's ``__setitem__`` keeps a
        Python number on the host and ``index_put_`` fills it with ``masked_fill_`` instead (no
        read): on such a device (``ScanConfig.host_scalar_fill``) only a device value counts."""
        if not isinstance(target, ast.Subscript) or not self.sites_enabled or self.calls_only:
            return
        masks = [p for p in _index_parts(target) if self._is_mask(p)]
        if not masks or not self._on_device(target, masks):
            return
        if self.config.host_scalar_fill and self.values.place(value) is not Place.DEVICE:
            return  # masked_fill_ of a number (or a one-element host tensor) reads nothing
        self._site(target, SyncKind.BLOCKING_READBACK, "Tensor.__setitem__(bool mask)", stack)

    def _mask_read(self, node: ast.Subscript, stack: tuple[Condition, ...]) -> None:
        """``x[mask]`` sizes its result by the mask's count (``nonzero``): a readback when ``x``
        or the mask is on the device; of a parameter's mask, where a caller passes a device one."""
        values = self.values
        masks = [p for p in _index_parts(node) if self._is_mask(p)]
        if self._on_device(node, masks):
            self._site(node, SyncKind.BLOCKING_READBACK, "Tensor.__getitem__(bool mask)", stack)
            return
        derived = next((d for m in masks if (d := values.derived(m)) is not None), None)
        if derived is not None and all(values.place(m) is Place.UNKNOWN for m in masks):
            self._site(node, SyncKind.BLOCKING_READBACK, "Tensor.__getitem__(bool mask)", stack,
                       known=False, param=derived[0], host=True, field=derived[1])

    def _list_index(self, node: ast.Subscript, stack: tuple[Condition, ...]) -> None:
        """``logits[:, self.suppressed_tokens] = -1e9``: a device tensor indexed by a Python list
        (or a numpy array) of indices; torch builds a host index tensor from it and uploads it
        from pageable memory before the gather or ``index_put_`` can run."""
        if not self.sites_enabled or self.calls_only:
            return
        values = self.values
        if not any(values.python_indices(p) for p in _index_parts(node)):
            return
        place = values.place(node.value)
        derived = values.derived(node.value) if place is Place.UNKNOWN else None
        if place is Place.DEVICE or derived is not None:
            # of a parameter's tensor: the callers' arguments say where it lives
            param, field = derived or ("", "")
            self._site(node, SyncKind.BLOCKING_COPY, "Tensor[list] (index upload)", stack,
                       known=place is Place.DEVICE, param=param, host=place is not Place.DEVICE,
                       field=field, upload=True)

    def _on_device(self, node: ast.Subscript, masks: list[ast.expr]) -> bool:
        """The masked tensor or one of its masks is on the device."""
        place = self.values.place
        return place(node.value) is Place.DEVICE or any(place(m) is Place.DEVICE for m in masks)

    def _is_mask(self, index: ast.expr) -> bool:
        """A boolean mask used as an index: what the value model calls one, a slice of one
        (``done[:n]``), or the ``~`` of any tensor (bitwise-not of integer indices would give
        negative ones: in an index, ``~t`` is a logical not, ``x[~has_state]``)."""
        while isinstance(index, ast.Subscript):
            index = index.value
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.Invert):
            return not isinstance(index.operand, ast.Constant)
        return self.values.is_mask(index)

    def _record(self, how: str, name: str, node: ast.Call, stack: tuple[Condition, ...]) -> None:
        self.facts.calls.append(Call(how, name, stack, node.lineno, node))

    def _call(self, node: ast.Call, stack: tuple[Condition, ...]) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id == "self":
                self._record("self", func.attr, node, stack)
            elif (
                isinstance(receiver, ast.Attribute)
                and isinstance(receiver.value, ast.Name)
                and receiver.value.id == "self"
            ):
                self._record("attr", f"{receiver.attr}.{func.attr}", node, stack)
            elif (
                isinstance(receiver, ast.Call)
                and isinstance(receiver.func, ast.Name)
                and receiver.func.id == "super"
            ):
                self._record("super", func.attr, node, stack)
            elif (op := custom_op(func)) is not None:
                self._record("op", op, node, stack)  # torch.ops.vllm.gdn_attention(...)
            elif self.calls_only:
                return  # the rest needs the value model
            elif (chain := self._self_chain(receiver, 0, _links(receiver))) is not None:
                # self.input_batch.block_table.commit(), for t in self.tables: t.commit(),
                # kv = self.kv_cache; kv.commit()
                self._record("attr" if len(chain) == 1 else "chain",
                             ".".join([*chain, func.attr]), node, stack)
            elif isinstance(receiver, ast.Name) and func.attr == "apply":
                # Fn.apply(...) of a torch.autograd.Function runs Fn.forward (the FLA wrappers)
                self._record("apply", receiver.id, node, stack)
            else:
                makers = self._makers(receiver)
                if makers:
                    self.facts.calls.append(
                        Call("local", func.attr, stack, node.lineno, node, makers=makers))
                if (
                    func.attr not in _READBACKS
                    and not func.attr.startswith("_")
                    and self.values.place(receiver) is Place.DEVICE
                ):
                    self._record("object", func.attr, node, stack)
            if self.calls_only:
                return
            if self._dispatched(receiver, 0):
                # group.get_metadata_builder().build(...): a class chosen at run time
                self._record("dispatch", func.attr, node, stack)
            self._method_rules(node, func, stack)
        elif isinstance(func, ast.Name):
            self._record("name", func.id, node, stack)
            bound = node.args[0] if func.id == "partial" and node.args else None
            if (
                isinstance(bound, ast.Attribute)
                and isinstance(bound.value, ast.Name)
                and bound.value.id == "self"
            ):
                # run_model = partial(self.model, **inputs): called later, count it as called here
                self.facts.calls.append(Call("self", bound.attr, stack, node.lineno))
            if self.calls_only:
                return
            if func.id in _SCALARS and len(node.args) == 1:
                self._readback(node, node.args[0], f"{func.id}()", stack, scalar=True)
            elif func.id in _ITERATING:
                self._iterated(node, func.id, stack)

    def _truth_test(self, test: ast.expr, stack: tuple[Condition, ...]) -> None:
        """``if mask.any():``, ``while lens.sum() > 0:``, ``a if not loc[-1] else b``: branching
        on one element of a device tensor calls ``__bool__``, which reads it back."""
        if not self.sites_enabled or self.calls_only:
            return
        operands: list[ast.expr] = []
        pending = [test]
        while pending:
            node = pending.pop()
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                pending.append(node.operand)
            elif isinstance(node, ast.BoolOp):
                pending.extend(node.values)
            elif isinstance(node, ast.Compare):
                operands.extend([node.left, *node.comparators])
            else:
                operands.append(node)
        self._index_scalars(operands, "branch test", stack)

    def _index_scalars(self, operands: list[ast.expr], use: str,
                       stack: tuple[Condition, ...]) -> None:
        """A slice bound (or a branch test) taken from one element of a device tensor
        (``query[:start_loc[-1]]``): Python needs an int (a bool) there, so ``__index__``
        (``__bool__``) reads the element back (gpu-physics.md: a readback waits for every kernel
        queued before it)."""
        for operand in operands:
            if self._device_scalar(operand, 0):
                param, field = self.values.derived(operand) or ("", "")
                place = self.values.place(operand)
                method = "__bool__" if use == "branch test" else "__index__"
                self._site(operand, SyncKind.BLOCKING_READBACK, f"Tensor.{method} ({use})", stack,
                           known=place is Place.DEVICE, param=param,
                           host=place is not Place.DEVICE, field=field)

    def _device_scalar(self, node: ast.expr, depth: int) -> bool:
        """One element of a device tensor (or of a parameter's, its callers decide): an
        integer index (``loc[-1]``, ``cu[i + 1]``), a whole reduction (``lens.sum()``), or a
        local bound only to one."""
        if depth > 3:
            return False
        if isinstance(node, ast.Name):
            # the binding that reaches this use: the last one above it (the branch it is in)
            earlier = [(line, value, how) for name, value, how, line in bindings(self._function)
                       if name == node.id and line < node.lineno]
            if not earlier:
                return False
            _line, value, how = max(earlier, key=lambda b: b[0])
            return value is not None and how is None and self._device_scalar(value, depth + 1)
        if isinstance(node, ast.Subscript):
            if not self.element_index(node.slice):
                return False
            tensor = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _REDUCTIONS and not node.args and not node.keywords):
            tensor = node.func.value
        else:
            return False
        place = self.values.place(tensor)  # x.shape[0]: host metadata of a device tensor
        return place is Place.DEVICE or (place is Place.UNKNOWN
                                         and self.values.derived(tensor) is not None)

    def _int_valued(self, node: ast.expr, depth: int = 0) -> bool:
        """A Python int: a literal, ``a // b`` of no device value (head counts), a local or a
        ``self.x`` this function binds only to such a value (``num_repeat := self.per_kv`` after
        ``self.per_kv = self.num_heads // self.num_kv_heads``)."""
        if depth > 4:
            return False
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            return all(self.values.place(o) is not Place.DEVICE for o in (node.left, node.right))
        if isinstance(node, ast.Name):
            bound = self.values.bound_to(node.id)
            if not bound:
                return self._int_parameter(node.id)
            return all(v is not None and how is None and self._int_valued(v, depth + 1)
                       for v, how in bound)
        if is_self_attribute(node):
            stored = [value for attr, value in member_sets([self._function])
                      if attr == node.attr]  # type: ignore[attr-defined]
            if stored:
                return all(self._int_valued(v, depth + 1) for v in stored)
            return self.values.int_attribute(node.attr)
        return False

    def element_index(self, key: ast.expr) -> bool:
        """An index that picks one element: an int literal (``-1``), or arithmetic of ints and
        names (``i``, ``i + 1`` of a loop over ``range``); a slice bound or a branch test needs
        one element, so where the code runs the name is an int."""
        if isinstance(key, ast.UnaryOp) and isinstance(key.op, ast.USub):
            key = key.operand
        if isinstance(key, ast.Constant):
            return type(key.value) is int
        if isinstance(key, ast.BinOp):
            return self.element_index(key.left) and self.element_index(key.right)
        return isinstance(key, ast.Name) and self._range_variable(key.id)

    def _range_variable(self, name: str) -> bool:
        """``name`` is the target of a ``for`` over ``range(...)`` in the bound function."""
        return self._function is not None and any(
            isinstance(n, ast.For) and isinstance(n.target, ast.Name) and n.target.id == name
            and isinstance(n.iter, ast.Call) and dotted(n.iter.func) == "range"
            for n in walk(self._function))

    def _int_parameter(self, name: str) -> bool:
        """A parameter annotated ``int`` (``num_samples: int``): its callers pass a count."""
        return self._function is not None and int_annotated(self._function, name)

    def _dispatched(self, node: ast.expr, depth: int) -> bool:
        """An object an accessor, list or attribute of ``[entries] dispatch_receivers`` hands
        out (``g.get_metadata_builder(i)``, ``self.builders[i]``, a local every binding of which
        is one, a loop over them): its class is picked at run time."""
        while isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Call):
            node = node.func
        if isinstance(node, ast.Attribute):
            return self.config.dispatch_receivers.match(node.attr)
        if isinstance(node, ast.Name) and node.id != "self":
            if self.config.dispatch_receivers.match(node.id):
                return True
            bound = self.values.bound_to(node.id) if depth < 3 else []
            return bool(bound) and all(
                value is not None and how in (None, "element")
                and self._dispatched(value, depth + 1) for value, how in bound)
        return False

    def _makers(self, receiver: ast.expr) -> tuple[str, ...]:
        """What built the object ``receiver`` holds, for ``session.step()``: the callee of each
        binding of a local (``Session(...)``, ``self._session_for(req)``, ``open_session()``),
        else a parameter's annotation (``session: Session``); for ``open_session().step()``
        the callee. Resolving them to classes is the call graph's job."""
        if isinstance(receiver, ast.Call):
            name = dotted(receiver.func)
            return (name,) if name and name != "super" else ()
        if not isinstance(receiver, ast.Name) or receiver.id == "self":
            return ()
        bound = [value for value, how in self.values.bound_to(receiver.id)
                 if how is None and value is not None and not is_none(value)]
        if bound:
            return tuple(dict.fromkeys(
                name for value in bound if isinstance(value, ast.Call)
                and (name := dotted(value.func))))
        annotation = param_annotation(self._function, receiver.id)
        return (element_class(annotation),) if annotation is not None else ()

    def _iterated(self, node: ast.Call, name: str, stack: tuple[Condition, ...]) -> None:
        """``max(t)``, ``sorted(t)``, ``max(a, b)`` of device tensors: element comparisons.
        A comprehension of identity tests (``any(p is not None for p in (a, b))``) yields
        Python bools, whatever it iterates."""
        if any(self.values.place(a) is Place.DEVICE for a in node.args
               if not isinstance(a, ast.Starred) and not _identity_tests(a)):
            self._site(node, SyncKind.BLOCKING_READBACK, f"{name}() of a tensor", stack)

    def _self_chain(self, node: ast.expr, depth: int, links: int = 2) -> list[str] | None:
        """``self.a.b`` -> [a, b]; ``self.xs[0]`` and a loop variable over ``self.xs`` ->
        [xs, []]; None unless the chain starts at ``self`` and has ``links`` links or more."""
        parts: list[str] = []
        while depth < 4:
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Subscript):
                parts.append("[]")
                node = node.value
            elif isinstance(node, ast.Name) and node.id != "self":
                origin = self.values.origin(node.id)
                if origin is None:
                    return None
                value, element = origin
                if element:
                    parts.append("[]")
                node, depth = value, depth + 1
            else:
                break
        if not (isinstance(node, ast.Name) and node.id == "self") or len(parts) < links:
            return None
        return parts[::-1]

    def _readback(
        self, node: ast.AST, value: ast.expr, api: str, stack: tuple[Condition, ...],
        scalar: bool = False,
    ) -> None:
        """A read of ``value`` to the host; a parameter's callers decide where it lives."""
        place = self.values.place(value)
        param, field = self.values.derived(value) or ("", "")
        reduced = scalar and bool(param) and isinstance(value, ast.Call) and isinstance(
            value.func, ast.Attribute) and value.func.attr in _REDUCTIONS
        if place is Place.DEVICE or (param and not scalar) or (place is Place.UNKNOWN
                                                             and not scalar):
            self._site(node, SyncKind.BLOCKING_READBACK, api, stack,
                       known=place is Place.DEVICE, on_self=_on_self(value), param=param,
                       host=place is Place.HOST, field=field)
        elif reduced and place is not Place.HOST:
            # int(k.max()) of a parameter: a finding only where a caller passes a device value
            self._site(node, SyncKind.BLOCKING_READBACK, api, stack, param=param, host=True,
                       field=field)

    def _data_dependent(self, node: ast.Call, func: ast.Attribute,
                        stack: tuple[Condition, ...]) -> None:
        """``torch.nonzero(x)``, ``x.unique()``, ``x.repeat_interleave(t)`` without its size."""
        names, sized_by = syncing_ops()
        method, receiver = func.attr, func.value
        module = dotted(receiver) in ("torch", "torch.nn.functional", "F")
        if method not in names:
            return
        if sized_by.get(method) and keyword(node, sized_by[method]) is not None:
            return
        operands = node.args if module else [receiver, *node.args]
        if method == "repeat_interleave":
            repeats = operands[1] if len(operands) > 1 else keyword(node, "repeats")
            if repeats is None or self._int_valued(repeats):
                return  # an int repeats sizes the output
        if not operands:
            return
        place = self.values.place(operands[0])
        param, field = self.values.derived(operands[0]) or ("", "")
        if place is Place.DEVICE or param:
            # of a parameter's data: the callers' arguments say where it lives
            where = "torch" if module else "Tensor"
            self._site(node, SyncKind.BLOCKING_READBACK, f"{where}.{method}", stack, param=param,
                       host=place is not Place.DEVICE, field=field)

    def _method_rules(self, node: ast.Call, func: ast.Attribute, stack: tuple[Condition, ...]) -> None:
        method, receiver = func.attr, func.value
        values = self.values
        if method == "synchronize":
            module = dotted(receiver)
            if module in _DEVICE_MODULES or module.startswith(("torch.", "torch_npu.")):
                self._site(node, SyncKind.DEVICE_SYNC, f"{module}.synchronize", stack)
            elif values.kind(receiver) == "stream":
                self._site(node, SyncKind.STREAM_SYNC, "Stream.synchronize", stack)
            else:
                self._site(node, SyncKind.EVENT_SYNC, "Event.synchronize", stack)
        elif method in _READBACKS and not node.args:
            self._readback(node, receiver, f"Tensor.{method}", stack)
        elif method == "to" and targets_cpu(node):
            place = values.place(receiver)
            if not is_true(keyword(node, "non_blocking")) and place is not Place.HOST:
                self._site(node, SyncKind.BLOCKING_COPY, "Tensor.to(cpu)", stack,
                           known=place is Place.DEVICE)
        elif method in ("to", "cuda", "npu") and _targets_device(node, method) and not (
                method == "to" and values.to_host_device(node)):
            self._host_to_device(node, receiver, f"Tensor.{method}(device)", stack)
        elif method in ("tensor", "as_tensor") and dotted(receiver) == "torch":
            self._tensor_of_host_data(node, stack)
        elif method == "copy_" and node.args:
            self._copy(node, receiver, node.args[0], stack)
        else:
            self._data_dependent(node, func, stack)

    def _host_to_device(self, node: ast.Call, source: ast.expr, api: str,
                        stack: tuple[Condition, ...]) -> None:
        """H2D from pageable host memory (an allocation without ``pin_memory``, a numpy array's
        memory), or from a strided view of any host buffer: the host waits for it. A buffer of
        unknown pinning (an attribute of an object the scan cannot see) is not judged."""
        values = self.values
        if values.place(source) is not Place.HOST:
            return

        def upload(label: str, **where: Any) -> None:
            self._site(node, SyncKind.BLOCKING_COPY, label, stack, upload=True, **where)

        if values.gathers(source):
            upload(f"{api} from a gather")
            return
        given = keyword(node, "dtype") if api.startswith("Tensor.to") else None
        if given is None and api.startswith("Tensor.to") and len(node.args) > 1:
            given = node.args[1]  # x.to(device, torch.int64)
        source_dtype = values.dtype(source)
        if given is not None and source_dtype is not None and dotted(given) not in (
                source_dtype, ""):
            upload("Tensor.to(device, dtype change)")
            return
        target = self._target_param(node) if api.startswith("Tensor.to") else ""
        pin = values.pin(source)
        if pin is Pin.PAGEABLE:
            upload(f"{api} from pageable", target=target)
        elif pin is Pin.UNKNOWN and (param := self._host_copy_of_param(source)) is not None:
            # q = probs.cpu(); q.npu(): pageable where a caller passes a device ``probs``
            upload(f"{api} from pageable", known=False, param=param, host=True, target=target)
        elif not values.contiguous(source):
            upload(f"{api} from a strided view", target=target)
        elif not is_true(keyword(node, "non_blocking")):
            # pinned or not, a copy that is not queued returns when the stream has run
            # everything before it and the copy
            upload(f"{api} without non_blocking", target=target)

    def _host_copy_of_param(self, source: ast.expr) -> str | None:
        """The parameter ``p`` when ``source`` is ``p.cpu()`` / ``p.to("cpu")`` (of a value
        derived from ``p``), directly or through a local bound only to such a copy (bindings on
        the device aside: ``q = q.npu()``): a new pageable tensor where a caller passes a device
        ``p``, ``p`` itself where it passes a host one."""
        if isinstance(source, ast.Name):
            bound = [v for v, how in self.values.bound_to(source.id)
                     if how is None and v is not None and self.values.place(v) is not Place.DEVICE]
            params = {self._host_copy_of_param(v) for v in bound if not isinstance(v, ast.Name)}
            return params.pop() if len(params) == 1 else None
        if isinstance(source, ast.Call) and copies_to_host(source):
            return self.values.param(source.func.value)  # type: ignore[attr-defined]
        return None

    def _target_param(self, node: ast.Call) -> str:
        """The parameter ``t`` of ``x.to(device=t.device)`` / ``x.to(t.device)``, ``meta.field``
        where ``t`` is a field read off parameter ``meta`` (through locals): "" otherwise."""
        device = keyword(node, "device") or (node.args[0] if node.args else None)
        if isinstance(device, ast.Attribute) and device.attr == "device":
            found = self.values.derived(device.value)
            return ".".join(part for part in found if part) if found else ""
        return ""

    def _tensor_of_host_data(self, node: ast.Call, stack: tuple[Condition, ...]) -> None:
        """``torch.tensor(ids, device=dev)``: a pageable host copy, then a blocking H2D."""
        device = keyword(node, "device")
        if device is None or not node.args or targets_cpu(node):
            return
        if isinstance(device, ast.Constant) and device.value in ("cpu", None):
            return
        if isinstance(node.args[0], ast.List | ast.Tuple) and not node.args[0].elts:
            return  # torch.tensor([], device=dev): no element to copy, an allocation only
        if self.values.place(node.args[0]) is not Place.DEVICE:
            self._site(node, SyncKind.BLOCKING_COPY, "torch.tensor(host data, device)", stack,
                       target=self._target_param(node), upload=True)

    def _copy(self, node: ast.Call, target: ast.expr, source: ast.expr,
              stack: tuple[Condition, ...]) -> None:
        values = self.values
        # host-to-host copies are everywhere; only a side known to be on the device counts
        target_place, source_place = values.place(target), values.place(source)
        to_host = target_place is Place.HOST or (
            target_place is Place.UNKNOWN and values.pin(target) is not Pin.UNKNOWN
        )
        non_blocking = is_true(keyword(node, "non_blocking"))
        converts = None not in (values.dtype(target), values.dtype(source)) and (
            values.dtype(target) != values.dtype(source)
        )
        if to_host and source_place is Place.DEVICE:
            if not non_blocking:
                self._site(node, SyncKind.BLOCKING_COPY, "Tensor.copy_", stack)
            elif converts:
                self._site(node, SyncKind.BLOCKING_COPY, "Tensor.copy_(device, dtype change)",
                           stack)
            elif values.pin(target) is Pin.PAGEABLE:
                self._site(node, SyncKind.BLOCKING_COPY, "Tensor.copy_(non_blocking, pageable)",
                           stack)
            elif not values.contiguous(target):
                self._site(node, SyncKind.BLOCKING_COPY, "Tensor.copy_ into a strided view",
                           stack)
        elif target_place is Place.DEVICE and source_place is Place.HOST:
            if converts:
                self._site(node, SyncKind.BLOCKING_COPY, "Tensor.copy_(host, dtype change)", stack,
                           upload=True)
            else:
                self._host_to_device(node, source, "Tensor.copy_", stack)

    def _site(
        self, node: ast.AST, kind: SyncKind, api: str, stack: tuple[Condition, ...],
        known: bool = True, on_self: bool = False, param: str = "", host: bool = False,
        field: str = "", target: str = "", upload: bool = False,
    ) -> None:
        self.facts.sites.append(Site(node.lineno, kind, api, stack, known, on_self, param, host,
                                     field, target, upload))


def _index_parts(node: ast.Subscript) -> list[ast.expr]:
    """The parts of an index: ``x[a, b:c]`` -> ``[a, b:c]``, ``x[a]`` -> ``[a]``."""
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]


def _exits(statements: list[ast.stmt]) -> bool:
    """The block always leaves: it ends in ``return``/``raise``/``continue``/``break``, or in an
    ``if``/``else`` whose every branch does (``if dcp: ...; return out`` ``else: ...; return
    out``)."""
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, ast.If):
        return bool(last.orelse) and _exits(last.body) and _exits(last.orelse)
    return isinstance(last, _TERMINATORS)


def _storing(function: FunctionNode) -> set[int]:
    """Ids of the statements of ``function`` that contain a ``self.x = ...`` (kept on the node:
    the attribute pass walks every method, and most statements store nothing on self)."""
    found: set[int] | None = getattr(function, "_syncgate_storing", None)
    if found is None:
        found = set()

        def visit(statement: ast.stmt) -> bool:
            targets = statement.targets if isinstance(statement, ast.Assign) else (
                [statement.target] if isinstance(statement, ast.AnnAssign) else [])
            hit = any(is_self_attribute(t) for t in targets)
            for block in _nested_blocks(statement):
                for child in block:
                    hit = visit(child) or hit
            if hit:
                found.add(id(statement))
            return hit

        for statement in function.body:
            visit(statement)
        function._syncgate_storing = found  # type: ignore[union-attr]
    return found


def _calling(function: FunctionNode, names: frozenset[str]) -> set[int]:
    """Ids of the statements of ``function`` that hold a call of one of ``names`` (``name(``,
    ``x.name(``; any ``partial(``, which may bind ``self.name``), nested ones included: those
    whose lines (a decorated one's from its first decorator) hold such a call."""
    names = names | {"partial"}
    lines = {n.lineno for n in walk(function) if isinstance(n, ast.Call) and _called(n) in names}
    found: set[int] = set()
    if not lines:
        return found

    def visit(statements: list[ast.stmt]) -> None:
        for statement in statements:
            decorators = getattr(statement, "decorator_list", ())
            first = min([statement.lineno, *(d.lineno for d in decorators)])
            last = statement.end_lineno or statement.lineno
            if not any(first <= line <= last for line in lines):
                continue
            found.add(id(statement))
            for block in _nested_blocks(statement):
                visit(block)

    visit(function.body)
    return found


def _nested_blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists a statement holds: its body, ``else`` and ``finally``, its
    ``except`` handlers' and its ``match`` cases' bodies."""
    for name in ("body", "orelse", "finalbody"):
        yield getattr(statement, name, None) or []
    for holder in [*getattr(statement, "handlers", []), *getattr(statement, "cases", [])]:
        yield holder.body


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else \
        func.attr if isinstance(func, ast.Attribute) else ""


def _links(receiver: ast.expr) -> int:
    """Links a ``self`` chain needs before a call on it is a chain call: a local standing for
    ``self.kv`` is one (the plain ``self.kv.commit()`` is an attribute call of its own)."""
    return 1 if isinstance(receiver, ast.Name) else 2


def custom_op(func: ast.expr) -> str | None:
    """``torch.ops.NS.NAME``: the name of the registered op a call runs, else None."""
    parts = dotted(func).split(".")
    return parts[3] if len(parts) == 4 and parts[:2] == ["torch", "ops"] else None


def int_annotated(function: FunctionNode, name: str) -> bool:
    """``function``'s parameter ``name`` is annotated ``int``."""
    annotation = param_annotation(function, name)
    return isinstance(annotation, ast.Name) and annotation.id == "int"


def optional_int_annotated(function: FunctionNode, name: str) -> bool:
    """``function``'s parameter ``name`` is annotated ``int``, ``int | None`` or
    ``Optional[int]``: an int wherever a test has ruled None out."""
    annotation = param_annotation(function, name)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        parts = [annotation.left, annotation.right]
        return any(dotted(p) == "int" for p in parts) and \
            all(dotted(p) == "int" or is_none(p) for p in parts)
    if isinstance(annotation, ast.Subscript) and dotted(annotation.value).endswith("Optional"):
        return dotted(annotation.slice) == "int"
    return int_annotated(function, name)


def param_annotation(function: FunctionNode, name: str) -> ast.expr | None:
    """The annotation of ``function``'s parameter ``name``, if it has one."""
    args = function.args
    return next((a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
                 if a.arg == name and a.annotation is not None), None)


def element_class(annotation: ast.expr) -> str:
    """The class an annotation's values are, through containers and optionals:
    ``list[list[Group]]``, ``dict[str, Group]``, ``Group | None`` -> ``Group``."""
    while True:
        if isinstance(annotation, ast.Subscript):
            inner = annotation.slice
            annotation = inner.elts[-1] if isinstance(inner, ast.Tuple) and inner.elts else inner
        elif isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            annotation = annotation.right if is_none(annotation.left) else annotation.left
        else:
            return dotted(annotation)


def _targets_device(call: ast.Call, method: str) -> bool:
    """``x.cuda()``, ``x.to(self.device)``, ``x.to(device=dev, non_blocking=True)``: not a dtype
    conversion (``x.to(torch.int64)``), not the host."""
    if method != "to":
        return True
    target = call.args[0] if call.args else keyword(call, "device")
    if target is None or targets_cpu(call):
        return False
    name = dotted(target)
    if name.startswith(("torch.", "np.")) and not name.endswith("device"):
        return False  # a dtype
    if isinstance(target, ast.Call):
        return dotted(target.func).endswith("device")
    if isinstance(target, ast.Constant):
        return isinstance(target.value, str) and target.value.split(":")[0] in (
            "cuda", "npu", "xpu")
    return "device" in name.rpartition(".")[2].lower()


def _on_self(node: ast.expr) -> bool:
    """``self.a``, ``self.a[i]``, ``self.a.b``: a field of the object the method belongs to."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
        if isinstance(node, ast.Name):
            return node.id == "self"
    return False

"""The sync rules, applied to one function body with its enclosing conditions.

Walks a function once and returns its sync sites and its outgoing calls, each with the stack of
conditions (``if``/``elif``/``else``, early returns, ``x if c else y``, ``a and f()``, allowed
context managers) around it. The call graph combines them; nothing here follows calls.

Rules (``kind`` is the audit vocabulary):

- ``X.synchronize()``: ``torch.{cuda,npu,xpu,accelerator}.synchronize()`` is ``device_sync``;
  on a stream (``current_stream()``, a ``Stream(...)``, a name with "stream") ``stream_sync``;
  on anything else (events, by construction or name) ``event_sync``.
- ``.tolist() / .item() / .cpu() / .numpy()`` of a value not known to be on the host, and
  ``int() / float() / bool()`` of a value known to be on the device: ``blocking_readback``.
- ``x.to("cpu")`` without ``non_blocking=True`` of a non-host value, ``host.copy_(dev)`` without
  it, and ``host.copy_(dev, non_blocking=True)`` into a buffer allocated without pinning:
  ``blocking_copy``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from vllm_syncgate.audit.events import SyncKind
from vllm_syncgate.scan.config import ScanConfig
from vllm_syncgate.scan.guards import Condition, Guard, GuardEvaluator, Truth
from vllm_syncgate.scan.sources import FunctionNode, dotted
from vllm_syncgate.scan.values import (
    Pin,
    Place,
    ValueModel,
    constructed_kind,
    is_none,
    is_true,
    keyword,
    targets_cpu,
)

_DEVICE_MODULES = ("torch.cuda", "torch.npu", "torch.xpu", "torch.mps", "torch.accelerator",
                   "torch_npu.npu", "torch.cuda.current_device")
# ``.numpy()`` is not one: it raises on a device tensor, so whatever it reads is on the host.
_READBACKS = ("tolist", "item", "cpu")
_SCALARS = ("int", "float", "bool")
_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


@dataclass(frozen=True)
class Site:
    line: int
    kind: SyncKind
    api: str
    conditions: tuple[Condition, ...]
    known: bool = True  # False: a readback of a value whose residence nothing says
    on_self: bool = False  # the value read back is a field of ``self``


@dataclass(frozen=True)
class Call:
    """An outgoing call: ``self.name()``, ``super().name()``, ``name()`` or ``Class()``."""

    how: str  # "self" | "super" | "attr" (self.obj.method()) | "name" | "object" (see below)
    name: str
    conditions: tuple[Condition, ...]
    # "object": ``x.method()`` on a value the device computed (``logprobs_tensors.tolists()``),
    # resolved to the one record class (NamedTuple, dataclass) that defines ``method``


@dataclass(frozen=True)
class Assignment:
    """A non-None ``self.attr = value``: what the value is, and the conditions around it."""

    attr: str
    place: Place
    pin: Pin
    kind: str | None
    made_by: str  # ``a.B`` for ``self.attr = a.B(...)``: the class the object may be
    conditions: tuple[Condition, ...]


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

    def __init__(self, config: ScanConfig, values: ValueModel, guards: GuardEvaluator) -> None:
        self.config = config
        self.values = values
        self.guards = guards

    def walk(self, node: FunctionNode, sites: bool = True, context: object = None) -> FunctionFacts:
        """Sites, calls and ``self.`` assignments; ``sites=False`` collects assignments only.

        ``context`` identifies the function for the value model's return-value lookups.
        """
        self.values.bind_function(node, context)
        self.guards.bind_function(node)
        self.facts = FunctionFacts([], [], [])
        self.sites_enabled = sites
        for decorator in node.decorator_list:
            self._expr(decorator, ())
        self._block(node.body, ())
        return self.facts

    # -- statements ---------------------------------------------------------------------------

    def _condition(self, test: ast.expr, positive: bool) -> Condition:
        truth = self.guards.evaluate(test)
        return Condition(test, positive, truth if positive else truth.negate(), test.lineno)

    def _block(self, statements: list[ast.stmt], stack: tuple[Condition, ...]) -> None:
        for statement in statements:
            self._statement(statement, stack)
            if (
                isinstance(statement, ast.If)
                and not statement.orelse
                and statement.body
                and isinstance(statement.body[-1], _TERMINATORS)
            ):
                # early exit: the rest of the block runs only when the test was false
                stack = (*stack, self._condition(statement.test, positive=False))

    def _statement(self, node: ast.stmt, stack: tuple[Condition, ...]) -> None:
        if isinstance(node, ast.If):
            self._expr(node.test, stack)
            self._block(node.body, (*stack, self._condition(node.test, True)))
            self._block(node.orelse, (*stack, self._condition(node.test, False)))
        elif isinstance(node, ast.With | ast.AsyncWith):
            inner = stack
            for item in node.items:
                self._expr(item.context_expr, stack)
                if self._allowed_context(item.context_expr):
                    text = f"with {ast.unparse(item.context_expr)}"
                    inner = (*inner, Condition(text, True, Truth(False, Guard.ALLOWED), node.lineno))
            self._block(node.body, inner)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                self._expr(decorator, stack)
            self._block(node.body, stack)
        elif isinstance(node, ast.ClassDef):
            return
        else:
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        self._assignment(target.attr, node.value, stack)
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

    def _assignment(self, attr: str, value: ast.expr, stack: tuple[Condition, ...]) -> None:
        if is_none(value):
            return
        if isinstance(value, ast.IfExp) and (is_none(value.body) or is_none(value.orelse)):
            # x = Event() if self.use_async_scheduling else None
            stack = (*stack, self._condition(value.test, positive=is_none(value.orelse)))
            value = value.orelse if is_none(value.body) else value.body
        made_by = dotted(value.func) if isinstance(value, ast.Call) else ""
        self.facts.assignments.append(Assignment(
            attr, self.values.place(value), self.values.pin(value), constructed_kind(value),
            made_by, stack,
        ))

    def _allowed_context(self, node: ast.expr) -> bool:
        if isinstance(node, ast.IfExp):  # nullcontext() if host_side else gpu_sync_allowed()
            return self._allowed_context(node.body) or self._allowed_context(node.orelse)
        target = node.func if isinstance(node, ast.Call) else node
        return self.config.allowed_contexts.match(dotted(target).rpartition(".")[2])

    # -- expressions --------------------------------------------------------------------------

    def _expr(self, node: ast.expr, stack: tuple[Condition, ...]) -> None:
        if not self.sites_enabled:
            return
        if isinstance(node, ast.IfExp):
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
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._expr(child, stack)
            elif isinstance(child, ast.comprehension):
                self._expr(child.iter, stack)
                for condition in child.ifs:
                    self._expr(condition, stack)
            elif isinstance(child, ast.keyword):
                self._expr(child.value, stack)
            elif isinstance(child, ast.arguments):
                continue

    def _call(self, node: ast.Call, stack: tuple[Condition, ...]) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id == "self":
                self.facts.calls.append(Call("self", func.attr, stack))
            elif (
                isinstance(receiver, ast.Attribute)
                and isinstance(receiver.value, ast.Name)
                and receiver.value.id == "self"
            ):
                self.facts.calls.append(Call("attr", f"{receiver.attr}.{func.attr}", stack))
            elif (
                isinstance(receiver, ast.Call)
                and isinstance(receiver.func, ast.Name)
                and receiver.func.id == "super"
            ):
                self.facts.calls.append(Call("super", func.attr, stack))
            elif (
                func.attr not in _READBACKS
                and not func.attr.startswith("_")
                and self.values.place(receiver) is Place.DEVICE
            ):
                self.facts.calls.append(Call("object", func.attr, stack))
            self._method_rules(node, func, stack)
        elif isinstance(func, ast.Name):
            self.facts.calls.append(Call("name", func.id, stack))
            bound = node.args[0] if func.id == "partial" and node.args else None
            if (
                isinstance(bound, ast.Attribute)
                and isinstance(bound.value, ast.Name)
                and bound.value.id == "self"
            ):
                # run_model = partial(self.model, **inputs): called later, count it as called here
                self.facts.calls.append(Call("self", bound.attr, stack))
            if (
                func.id in _SCALARS
                and len(node.args) == 1
                and self.values.place(node.args[0]) is Place.DEVICE
            ):
                self._site(node, SyncKind.BLOCKING_READBACK, f"{func.id}()", stack)

    def _method_rules(self, node: ast.Call, func: ast.Attribute, stack: tuple[Condition, ...]) -> None:
        method, receiver = func.attr, func.value
        if method == "synchronize":
            module = dotted(receiver)
            if module in _DEVICE_MODULES or module.startswith(("torch.", "torch_npu.")):
                self._site(node, SyncKind.DEVICE_SYNC, f"{module}.synchronize", stack)
            elif self.values.kind(receiver) == "stream":
                self._site(node, SyncKind.STREAM_SYNC, "Stream.synchronize", stack)
            else:
                self._site(node, SyncKind.EVENT_SYNC, "Event.synchronize", stack)
        elif method in _READBACKS and not node.args:
            place = self.values.place(receiver)
            if place is not Place.HOST:
                self._site(node, SyncKind.BLOCKING_READBACK, f"Tensor.{method}", stack,
                           known=place is Place.DEVICE, on_self=_on_self(receiver))
        elif method == "to" and targets_cpu(node):
            place = self.values.place(receiver)
            if not is_true(keyword(node, "non_blocking")) and place is not Place.HOST:
                self._site(node, SyncKind.BLOCKING_COPY, "Tensor.to(cpu)", stack,
                           known=place is Place.DEVICE)
        elif method == "copy_" and node.args:
            # host-to-host copies are everywhere; only a source known to be on the device counts
            to_host = self.values.place(receiver) is Place.HOST or (
                self.values.pin(receiver) is not Pin.UNKNOWN
            )
            if not (to_host and self.values.place(node.args[0]) is Place.DEVICE):
                return
            if not is_true(keyword(node, "non_blocking")):
                self._site(node, SyncKind.BLOCKING_COPY, "Tensor.copy_", stack)
            elif self.values.pin(receiver) is Pin.PAGEABLE:
                self._site(node, SyncKind.BLOCKING_COPY, "Tensor.copy_(non_blocking, pageable)",
                           stack)

    def _site(
        self, node: ast.Call, kind: SyncKind, api: str, stack: tuple[Condition, ...],
        known: bool = True, on_self: bool = False,
    ) -> None:
        self.facts.sites.append(Site(node.lineno, kind, api, stack, known, on_self))


def _on_self(node: ast.expr) -> bool:
    """``self.a``, ``self.a[i]``, ``self.a.b``: a field of the object the method belongs to."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
        if isinstance(node, ast.Name):
            return node.id == "self"
    return False

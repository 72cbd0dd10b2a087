"""Where a value lives (host or device), whether a host buffer is pinned, what an object is.

The scan cannot run the code, so it infers from what the source says: names (``*_cpu``,
``*_np``), allocations (``torch.empty(..., device=self.device)``, ``pin_memory=...``), numpy
calls, results of ``.cpu()``/``.tolist()``, annotations of parameters. Unknown stays unknown:
a ``.tolist()`` on an unknown value is a finding (it has to be a tensor or an array, and nothing
says it is on the host), but ``int(x)`` of an unknown value is not (it is almost always a
Python number). That split keeps the scan quiet on plain Python without missing readbacks.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from vllm_syncgate.scan.config import ScanConfig
from vllm_syncgate.scan.sources import dotted


class Place(enum.Enum):
    HOST = "host"
    DEVICE = "device"
    UNKNOWN = "unknown"


class Pin(enum.Enum):
    PINNED = "pinned"
    PAGEABLE = "pageable"
    UNKNOWN = "unknown"


# Calls whose result is a host value whatever their argument.
_HOST_BUILTINS = frozenset(
    [
        "len", "int", "float", "bool", "str", "range", "enumerate", "zip", "list", "tuple",
        "dict", "set", "sorted", "sum", "min", "max", "abs", "round", "any", "all",
        "isinstance", "hasattr", "getattr", "reversed", "divmod", "hash", "id"
    ]
)
# Tensor methods that return host values (metadata or a copy on the host).
_HOST_METHODS = frozenset(
    [
        "cpu", "numpy", "tolist", "item", "size", "dim", "numel", "nelement", "element_size",
        "data_ptr", "stride", "is_contiguous", "is_pinned", "get_device", "storage_offset",
        "tolists"
    ]
)
_DEVICE_METHODS = frozenset({"cuda", "npu", "xpu"})
_CREATORS = frozenset(
    [
        "empty", "zeros", "ones", "full", "arange", "tensor", "as_tensor", "empty_like",
        "zeros_like", "ones_like", "full_like", "randint", "rand", "randn", "linspace"
    ]
)
_NUMPY_MODULES = frozenset({"np", "numpy"})
_TENSOR_ANNOTATIONS = frozenset({"torch.Tensor", "Tensor"})
_HOST_ANNOTATIONS = frozenset(
    [
        "int", "float", "bool", "str", "list", "dict", "tuple", "set", "Sequence", "Mapping",
        "Iterable", "np.ndarray", "numpy.ndarray", "npt.NDArray", "NDArray"
    ]
)


# (context of the calling function, the call, tuple item or None) -> place of the returned value
Returns = Callable[[object, ast.Call, int | None], Place]


def _combine(places: Iterable[Place]) -> Place:
    """Operands of one expression: any device operand makes a device result."""
    seen = set(places)
    if Place.DEVICE in seen:
        return Place.DEVICE
    if Place.HOST in seen:
        return Place.HOST
    return Place.UNKNOWN


def _combine_strict(places: set[Place]) -> Place:
    """No item: host; mixed items: device if any is, else unknown."""
    if not places:
        return Place.HOST
    return Place.DEVICE if Place.DEVICE in places else Place.UNKNOWN


def _agree(values: list[enum.Enum], unknown: enum.Enum) -> enum.Enum:
    """All assignments of one name must agree, else nothing is known about it."""
    return values[0] if values and all(v is values[0] for v in values) else unknown


def is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def targets_cpu(call: ast.Call) -> bool:
    """``x.to("cpu")``, ``x.to(device="cpu")``, ``x.to(torch.device("cpu"))``."""
    candidates = [*call.args[:1], keyword(call, "device")]
    for node in candidates:
        if isinstance(node, ast.Constant) and node.value == "cpu":
            return True
        if (
            isinstance(node, ast.Call)
            and dotted(node.func).endswith("device")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "cpu"
        ):
            return True
    return False


def constructed_kind(node: ast.expr) -> str | None:
    """``"event"`` for ``torch.cuda.Event(...)`` and friends, ``"stream"`` for streams."""
    if isinstance(node, ast.Call):
        leaf = dotted(node.func).rpartition(".")[2]
        if leaf.endswith("Event"):
            return "event"
        if leaf.endswith("Stream") or leaf in ("current_stream", "default_stream"):
            return "stream"
    return None


@dataclass
class Facts:
    """What is known about ``self.<attr>`` across all scanned classes, by attribute name."""

    place: dict[str, Place] = field(default_factory=dict)
    pin: dict[str, Pin] = field(default_factory=dict)
    kind: dict[str, str] = field(default_factory=dict)
    # attr -> (present in the target configuration?, guard category) when every non-None
    # assignment sits under a condition of one category (e.g. created only with async scheduling)
    presence: dict[str, tuple[bool, str]] = field(default_factory=dict)
    # attr -> place of each field of the record (NamedTuple, dataclass) stored there, in order:
    # (scheduler_output, logits, ...) = self.execute_model_state unpacks them by position
    fields: dict[str, list[Place]] = field(default_factory=dict)


class ValueModel:
    """Answers place/pin/kind questions inside one function."""

    def __init__(self, config: ScanConfig, facts: Facts, returns: Returns | None = None) -> None:
        self.config = config
        self.facts = facts
        self.returns = returns
        self.context: object = None
        self.places: dict[str, Place] = {}
        self.pins: dict[str, Pin] = {}
        self.kinds: dict[str, str] = {}
        # name -> (line, place) of each binding in source order: a use sees the latest before it
        self.timeline: dict[str, list[tuple[int, Place]]] = {}
        self._function = None

    # -- building the local environment -------------------------------------------------------

    def bind_function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, context: object = None
    ) -> None:
        """Bind to one function; its locals are inferred on the first question about a name.

        ``context`` is handed to ``returns`` so it can resolve calls made from this function.
        """
        self._function: ast.FunctionDef | ast.AsyncFunctionDef | None = node
        self.context = context
        self.places, self.pins, self.kinds, self.timeline = {}, {}, {}, {}

    def _locals(self) -> None:
        """Infer the locals of the bound function (two passes, so a chain of names settles)."""
        node, self._function = self._function, None
        if node is None:
            return
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            place = self._name_place(arg.arg)
            if place is Place.UNKNOWN and arg.annotation is not None:
                place = _annotation_place(arg.annotation)
            self.places[arg.arg] = place
        bindings = list(_bindings(node))
        for _ in range(2):
            collected: dict[str, list[Place]] = {}
            pins: dict[str, list[Pin]] = {}
            timeline: dict[str, list[tuple[int, Place]]] = {}
            for name, value, element, line in bindings:
                if is_none(value):
                    continue  # x = None first, the real value later
                if element == "range":
                    place = Place.HOST
                elif element is not None and element.isdigit() and isinstance(value, ast.Call):
                    place = self._returned(value, int(element))
                elif element is not None and element.isdigit() and _self_attr(value):
                    record = self.facts.fields.get(value.attr, [])  # type: ignore[union-attr]
                    index = int(element)
                    place = record[index] if index < len(record) else Place.UNKNOWN
                else:
                    place = self.place(value) if value is not None else Place.UNKNOWN
                collected.setdefault(name, []).append(place)
                timeline.setdefault(name, []).append((line, place))
                if value is not None and element is None:
                    pins.setdefault(name, []).append(self.pin(value))
                    kind = constructed_kind(value)
                    if kind:
                        self.kinds[name] = kind
            for name, values in collected.items():
                pattern = self._name_place(name)
                self.places[name] = (
                    pattern if pattern is not Place.UNKNOWN else _agree(values, Place.UNKNOWN)
                )
            for name, values in pins.items():
                self.pins[name] = _agree(values, Pin.UNKNOWN)
            self.timeline = {name: sorted(t, key=lambda b: b[0]) for name, t in timeline.items()}

    # -- questions ----------------------------------------------------------------------------

    def place(self, node: ast.expr) -> Place:
        if isinstance(node, ast.Constant | ast.JoinedStr):
            return Place.HOST
        if isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict):
            # a container is as host-side as its items: (ids_gpu, n)[0] is on the device
            items = node.values if isinstance(node, ast.Dict) else node.elts
            places = {self.place(item) for item in items if not is_none(item)}
            return places.pop() if len(places) == 1 else _combine_strict(places)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return self.place(node.elt)
        if isinstance(node, ast.Name):
            self._locals()
            pattern = self._name_place(node.id)
            if pattern is not Place.UNKNOWN:
                return pattern
            earlier = [p for line, p in self.timeline.get(node.id, []) if line < node.lineno]
            if earlier:
                return earlier[-1]  # logits = logits.to("cpu"): the later uses see the host copy
            if node.id in self.places:
                return self.places[node.id]
            return Place.UNKNOWN
        if isinstance(node, ast.Attribute):
            own = self._name_place(node.attr)
            if own is not Place.UNKNOWN:
                return own
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self.facts.place.get(node.attr, Place.UNKNOWN)
            # a field of an object the model or sampler returned is on the device with it
            return Place.DEVICE if self.place(node.value) is Place.DEVICE else Place.UNKNOWN
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keyed = self._name_place(key.value)  # mm_input["image_grid_thw"]
                if keyed is not Place.UNKNOWN:
                    return keyed
            return self.place(node.value)
        if isinstance(node, ast.Starred):
            return self.place(node.value)
        if isinstance(node, ast.Call):
            return self._call_place(node)
        if isinstance(node, ast.BinOp):
            return _combine([self.place(node.left), self.place(node.right)])
        if isinstance(node, ast.UnaryOp):
            return self.place(node.operand)
        if isinstance(node, ast.Compare):
            return _combine(self.place(n) for n in [node.left, *node.comparators])
        if isinstance(node, ast.BoolOp):
            return _combine(self.place(v) for v in node.values)
        if isinstance(node, ast.IfExp):
            # x if c else None: the value is x's (None is no host data)
            places = [self.place(v) for v in (node.body, node.orelse) if not is_none(v)]
            return places[0] if len(set(places)) == 1 else _combine(places)
        return Place.UNKNOWN

    def pin(self, node: ast.expr) -> Pin:
        if isinstance(node, ast.Name):
            self._locals()
            return self.pins.get(node.id, Pin.UNKNOWN)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self.facts.pin.get(node.attr, Pin.UNKNOWN)
            return Pin.UNKNOWN
        if isinstance(node, ast.Subscript):
            return self.pin(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "pin_memory":
                return Pin.PINNED
            if isinstance(func, ast.Attribute) and func.attr in ("view", "reshape", "flatten",
                                                                  "squeeze", "unsqueeze"):
                return self.pin(func.value)
            name = dotted(func)
            if name == "torch.from_numpy":
                return Pin.PAGEABLE
            if name.startswith("torch.") and name.rpartition(".")[2] in _CREATORS:
                flag = keyword(node, "pin_memory")
                if flag is None:
                    return Pin.PAGEABLE if self._host_allocation(node) else Pin.UNKNOWN
                if isinstance(flag, ast.Constant):
                    return Pin.PINNED if flag.value else Pin.PAGEABLE
                return Pin.PINNED  # pin_memory=self.pin_memory: pinned where pinning is possible
        return Pin.UNKNOWN

    def kind(self, node: ast.expr) -> str | None:
        """``"event"`` / ``"stream"`` for a receiver of ``.synchronize()``, from its origin or name."""
        if isinstance(node, ast.Name):
            self._locals()
            if node.id in self.kinds:
                return self.kinds[node.id]
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in self.facts.kind
        ):
            return self.facts.kind[node.attr]
        made = constructed_kind(node)
        if made:
            return made
        leaf = dotted(node).rpartition(".")[2].lower()
        if "stream" in leaf:
            return "stream"
        if "event" in leaf:
            return "event"
        return None

    # -- helpers ------------------------------------------------------------------------------

    def _name_place(self, name: str) -> Place:
        if self.config.host.match(name):
            return Place.HOST
        if self.config.device.match(name):
            return Place.DEVICE
        return Place.UNKNOWN

    def _runs_on_device(self, func: ast.expr) -> bool:
        """``self.model(...)``, ``self.sampler(...)``, ``self.model.compute_logits(...)``: the
        modules the runner calls compute on the device, so what they return lives there."""
        chain = dotted(func).split(".")
        return (
            len(chain) >= 2
            and chain[0] == "self"
            and self.config.device_modules.match(chain[1])
        )

    def _host_allocation(self, call: ast.Call) -> bool:
        device = keyword(call, "device")
        return device is None or (isinstance(device, ast.Constant) and device.value == "cpu")

    def _returned(self, call: ast.Call, element: int | None) -> Place:
        """What a scanned function returns (``element``: one item of a returned tuple)."""
        if self.returns is None:
            return Place.UNKNOWN
        return self.returns(self.context, call, element)

    def _call_place(self, node: ast.Call) -> Place:
        func = node.func
        name = dotted(func)
        if isinstance(func, ast.Name) and func.id in _HOST_BUILTINS:
            return Place.HOST
        root = name.partition(".")[0]
        if root in _NUMPY_MODULES or name == "torch.from_numpy":
            return Place.HOST
        if name.startswith(("torch.", "torch_npu.")):
            leaf = name.rpartition(".")[2]
            if leaf in _CREATORS:
                if keyword(node, "pin_memory") is not None or self._host_allocation(node):
                    return Place.HOST
                return Place.DEVICE
            return _combine(self.place(a) for a in node.args)
        if self._runs_on_device(func):
            return Place.DEVICE
        if isinstance(func, ast.Attribute):
            method = func.attr
            if method in _HOST_METHODS:
                return Place.HOST
            key = node.args[0] if method == "get" and node.args else None
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keyed = self._name_place(key.value)  # mm_input.get("image_grid_thw", [])
                if keyed is not Place.UNKNOWN:
                    return keyed
            if method in _DEVICE_METHODS:
                return Place.DEVICE
            if method == "to":
                if targets_cpu(node):
                    return Place.HOST
                receiver = self.place(func.value)
                return Place.DEVICE if receiver is Place.HOST and node.args else receiver
            if isinstance(func.value, ast.Name) and func.value.id == "self":
                returned = self._returned(node, None)
                if returned is not Place.UNKNOWN:
                    return returned
            receiver = self.place(func.value)
            return receiver if receiver is not Place.UNKNOWN else self._name_place(method)
        return self._returned(node, None)


def _self_attr(node: ast.expr | None) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def record_fields(node: ast.ClassDef) -> list[Place]:
    """Place of each annotated field of a record class body, in order."""
    return [
        _annotation_place(item.annotation)
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    ]


def _annotation_place(annotation: ast.expr) -> Place:
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        parts = [_annotation_place(annotation.left), _annotation_place(annotation.right)]
        known = [p for p in parts if p is not Place.UNKNOWN]
        return known[0] if known and all(p is known[0] for p in known) else Place.UNKNOWN
    if isinstance(annotation, ast.Constant) and is_none(annotation):
        return Place.UNKNOWN
    name = dotted(annotation)
    if name in _TENSOR_ANNOTATIONS:
        return Place.DEVICE
    if name in _HOST_ANNOTATIONS or name.rpartition(".")[2] in _HOST_ANNOTATIONS:
        return Place.HOST
    return Place.UNKNOWN


def _bindings(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
) -> Iterable[tuple[str, ast.expr | None, str | None, int]]:
    """(name, value, how, line) for each local binding; ``how`` marks loop/unpacked elements."""
    for node in ast.walk(func):
        line = getattr(node, "lineno", None)
        if line is None:  # a comprehension: bound where its first name is
            line = getattr(node.target, "lineno", 0) if isinstance(node, ast.comprehension) else 0
        for name, value, how in _bindings_of(node):
            yield name, value, how, line


def _bindings_of(node: ast.AST) -> Iterable[tuple[str, ast.expr | None, str | None]]:
    """The bindings one statement or comprehension makes."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _bind(target, node.value)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value:
        yield from _bind(node.target, node.value)
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        iterator = node.iter
        if isinstance(iterator, ast.Call) and dotted(iterator.func) == "range":
            for name in _names(node.target):
                yield name, None, "range"
        elif isinstance(iterator, ast.Call) and dotted(iterator.func) == "enumerate":
            target = node.target
            if isinstance(target, ast.Tuple) and len(target.elts) == 2 and iterator.args:
                for name in _names(target.elts[0]):
                    yield name, None, "range"
                for name in _names(target.elts[1]):
                    yield name, iterator.args[0], "element"
        else:
            for name in _names(node.target):
                yield name, iterator, "element"


def _bind(target: ast.expr, value: ast.expr) -> Iterable[tuple[str, ast.expr | None, str | None]]:
    if isinstance(target, ast.Name):
        yield target.id, value, None
    elif isinstance(target, ast.Tuple | ast.List):
        if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
            for sub_target, sub_value in zip(target.elts, value.elts, strict=True):
                yield from _bind(sub_target, sub_value)
        elif isinstance(value, ast.Call) or _self_attr(value):
            for position, element in enumerate(target.elts):
                for name in _names(element):
                    yield name, value, str(position)  # item ``position`` of what the call returns
        else:
            for name in _names(target):
                yield name, value, "element"


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]

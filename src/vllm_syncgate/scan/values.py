"""Where a value lives (host or device), whether a host buffer is pinned, what an object is.

The scan cannot run the code, so it infers from what the source says: dataflow first
(allocations ``torch.empty(..., device=self.device)``, ``pin_memory=...``, torch operations on
device operands, collectives, numpy calls, results of ``.cpu()``/``.tolist()``, annotations), and
names (``*_cpu``, ``*_np``, ``.gpu``) only where dataflow says nothing: a ``.gpu[...]`` slice
bound to ``ids_cpu`` is a device value. Unknown stays unknown:
a ``.tolist()`` on an unknown value is a finding (it has to be a tensor or an array, and nothing
says it is on the host), but ``int(x)`` of an unknown value is not (it is almost always a
Python number). That split keeps the scan quiet on plain Python without missing readbacks.
"""

from __future__ import annotations

import ast
import enum
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol, TypeVar

from vllm_syncgate.scan.config import ScanConfig, packaged_table
from vllm_syncgate.scan.sources import ClassInfo, FunctionInfo, dotted, is_self_attribute, walk


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
# Collectives hand back a tensor where their input lives (an all-gather of a device tensor).
_COLLECTIVES = ("all_reduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all")
# Views that keep a pinned buffer's memory; anything else (a gather, a transpose) copies or
# strides it.
_VIEWS = ("view", "reshape", "flatten", "squeeze", "unsqueeze")
_NON_CONTIGUOUS_METHODS = frozenset({"t", "transpose", "permute", "mT", "T", "expand"})
# Masks: comparisons, logical ops, predicates (``x[x > 3]``, ``x[torch.isnan(x)]``)
_MASK_CALLS = frozenset(
    {"isnan", "isinf", "isfinite", "isin", "logical_and", "logical_or", "logical_not",
     "logical_xor", "eq", "ne", "gt", "ge", "lt", "le", "bool"}
)
_T = TypeVar("_T")
# Calls whose result is a boolean mask when what they reduce or reshape is one
_MASK_OF_MASK = frozenset({"any", "all", "reshape", "view", "flatten", "squeeze", "unsqueeze",
                           "contiguous", "expand", "repeat"})
# Calls that make an array of indices (``buf[np.arange(n)]`` gathers, ``buf[:n]`` does not)
_INDEX_MAKERS = frozenset({"array", "asarray", "arange", "nonzero", "where", "flatnonzero",
                           "argsort", "tensor", "as_tensor", "from_numpy", "unique"})
# torch functions whose result is a new tensor (not a view): of host operands, pageable memory
_NEW_TENSOR_OPS = frozenset({"cat", "concat", "concatenate", "stack", "cumsum", "diff",
                             "repeat_interleave", "clamp", "where", "flip", "roll"})
_TENSOR_ANNOTATIONS = frozenset({"torch.Tensor", "Tensor"})
_HOST_ANNOTATIONS = frozenset(
    [
        "int", "float", "bool", "str", "list", "dict", "tuple", "set", "Sequence", "Mapping",
        "Iterable", "np.ndarray", "numpy.ndarray", "npt.NDArray", "NDArray"
    ]
)


class Arguments(Protocol):
    """Where the argument a call passes as one parameter lives."""

    def __call__(self, param: str) -> Place:
        """Place of the argument passed as ``param`` (unknown when none is)."""


class Returns(Protocol):
    """What a scanned function called from the bound one returns."""

    def __call__(self, context: object, call: ast.Call, element: int | None,
                 caller: ValueModel | None = None) -> Place:
        """Place of the value (``element``: one item of a returned tuple); ``caller`` answers
        where the call's arguments live, which a helper's result may depend on."""

    def pin(self, context: object, call: ast.Call) -> Pin:
        """Whether the host buffer it returns is pinned."""


_FIRST = operator.itemgetter(0)  # a binding's line in the timeline


def _combine(places: Iterable[Place]) -> Place:
    """Operands of one expression: any device operand makes a device result."""
    seen = list(places)  # not a set: an enum member's hash is Python code
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
    return values[0] if values and values.count(values[0]) == len(values) else unknown


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


def copies_to_host(call: ast.Call) -> bool:
    """``x.cpu()``, ``x.to("cpu")``: ``x`` copied into new host memory (``x`` itself when it is
    on the host already)."""
    func = call.func
    return isinstance(func, ast.Attribute) and (
        (func.attr == "cpu" and not call.args) or (func.attr == "to" and targets_cpu(call)))


def is_dtype(node: ast.expr) -> bool:
    """``torch.int32``, ``np.float16``, ``x.dtype``, a name with "dtype" in it: a dtype."""
    name = dotted(node)
    leaf = name.rpartition(".")[2].lower()
    return (name.startswith(("torch.", "np.", "numpy.")) and not leaf.endswith("device")) or (
        "dtype" in leaf)


def moves_to_device(call: ast.Call) -> bool:
    """Whether ``x.to(...)`` may move ``x`` to the device: not for a dtype alone
    (``x.to(torch.float16)``, ``x.to(kv_dtype)``), which converts where ``x`` lives."""
    if targets_cpu(call):
        return False
    if keyword(call, "device") is not None:
        return True
    return bool(call.args) and not is_dtype(call.args[0])


def to_parameter(model: ValueModel, call: ast.Call) -> bool:
    """``x.to(t)`` with ``t`` a tensor parameter (not a device or dtype): ``x`` goes where the
    caller's tensor lives (an op's ``.to(cu_seqlens)``), which only the callers know."""
    target = call.args[0] if call.args else None
    return target is not None and moves_to_device(call) and bool(model.param(target)) \
        and "device" not in dotted(target).lower()


def makes_tensor(value: ast.expr | None) -> bool:
    """Whether ``value`` is certainly a tensor: a torch creator or new-tensor op, or a ``.to()``
    that names a dtype (a module's or a feature batch's ``.to`` seldom does)."""
    if not isinstance(value, ast.Call):
        return False
    name = dotted(value.func)
    if name.startswith("torch.") and name.count(".") == 1:
        return name[6:] in _CREATORS or name[6:] in _NEW_TENSOR_OPS
    dtype = keyword(value, "dtype")
    return isinstance(value.func, ast.Attribute) and value.func.attr == "to" and \
        dtype is not None and is_dtype(dtype)


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
    # attr -> dtype text of its allocation (``torch.int32``), when every assignment agrees
    dtype: dict[str, str] = field(default_factory=dict)
    # field name -> place its record class annotates (``req_ids: list[str]`` is host data), for
    # the fields of what the model and sampler return
    annotated: dict[str, Place] = field(default_factory=dict)
    # (id of the class, attr) -> pin / dtype of its allocations in that class: two classes that
    # both store a ``positions_cpu``, one pinned and one not, do not make each other unknown
    owner_pin: dict[tuple[int, str], Pin] = field(default_factory=dict)
    owner_dtype: dict[tuple[int, str], str] = field(default_factory=dict)
    owner_place: dict[tuple[int, str], Place] = field(default_factory=dict)
    # (id of the class, attr) -> whether that class only ever sets it to a Python list
    # (``self.suppressed = self._suppressed_ids()`` of a method returning a comprehension)
    collections: dict[tuple[int, str], bool] = field(default_factory=dict)
    # (id of the class, attr) -> whether that class only ever sets it to ``False``
    hard_off: dict[tuple[int, str], bool] = field(default_factory=dict)
    # (id of the class, attr) -> whether that class only ever sets it to a Python int (a
    # literal, an ``int``-annotated parameter: ``self.token_mel_ratio = token_mel_ratio``)
    ints: dict[tuple[int, str], bool] = field(default_factory=dict)
    # (id of the class, dict attr, key) -> place of what its stores ``self.attr["key"] = v``
    # put there (ValueModel._memo_slot); None while being judged
    memo_slots: dict[tuple[int, str, str], Place | None] = field(
        default_factory=dict, repr=False, compare=False)
    keyed: KeyedStores = field(default_factory=dict, repr=False, compare=False)
    # field name -> (place, pin) of what every scanned construction of a record stores in a
    # field of that name (``Meta(chunk_lens=host_lens)``), asked on demand
    stored: Stored | None = None
    # attributes a model factory filled (``self.talker = init_vllm_registered_model(...)``):
    # like ``[values] device_modules``, what calls on them return lives on the device
    model_attrs: frozenset[str] = frozenset()
    # each function's locals per way of judging them, inferred once for every value model
    # (ValueModel._locals); ``cuts`` counts answers taken from a judgement still in progress (a
    # recursion): locals that met one are not kept, a later judgement may answer otherwise
    locals_memo: dict[tuple, tuple] = field(default_factory=dict, repr=False, compare=False)
    cuts: int = 0


class Stored(Protocol):
    """Where the values that constructions of records store in one field live."""

    def __call__(self, name: str) -> tuple[Place, Pin]:
        """(place, pin) all constructions agree on, else unknown."""


class ValueModel:
    """Answers place/pin/kind questions inside one function."""

    def __init__(self, config: ScanConfig, facts: Facts, returns: Returns | None = None) -> None:
        self.config = config
        self.facts = facts
        self.returns = returns
        self.context: object = None
        self.flow: dict[str, Place] = {}  # what assignments and annotations say, per name
        self.params: set[str] = set()
        self.annotations: dict[str, Place] = {}
        # False for a callee judged for its caller: what the caller passes decides, not the
        # ``torch.Tensor`` on the parameter
        self.trust_annotations = True
        self.rebound: set[str] = set()
        self.pins: dict[str, Pin] = {}
        self.kinds: dict[str, str] = {}
        # name -> (line, place) of each binding in source order: a use sees the latest that ends
        # before it (the line its value ends on: ``x = cat([x, ones(device=x.device)])`` over
        # three lines reads the earlier ``x`` inside its own value)
        self.timeline: dict[str, list[tuple[int, Place]]] = {}
        self._previous: dict[str, list[tuple[int, Place]]] = {}
        self._evaluating: str | None = None  # the local whose binding _locals is evaluating
        # what the first pass of _locals read that a second pass may read otherwise:
        # (what, name, line); None outside that pass
        self._reads: list[tuple[str, str, int]] | None = None
        self._function = None
        self._scope: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        self._mask_names: set[str] | None = None
        self.dtypes: dict[str, str | None] = {}
        # where each parameter's argument lives, for a helper judged for one call of it
        # (``arguments``: parameter -> place); ``asked``: the parameters a question needed
        self.arguments: Arguments | None = None
        self.asked: set[str] = set()
        # a parameter annotated with a ``[values] device_records`` class is a device record
        # (the attribute pass: ``self.seq_lens = meta.seq_lens[:n]``); a site's own function
        # leaves such a parameter to its callers' dataflow and ``_record_field``
        self.records = False

    # -- building the local environment -------------------------------------------------------

    def bind_function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, context: object = None
    ) -> None:
        """Bind to one function; its locals are inferred on the first question about a name.

        ``context`` is handed to ``returns`` so it can resolve calls made from this function.
        """
        self._function: ast.FunctionDef | ast.AsyncFunctionDef | None = node
        self._scope = node
        self._mask_names: set[str] | None = None
        self.context = context
        self.flow, self.pins, self.kinds, self.timeline, self._previous = {}, {}, {}, {}, {}
        self._evaluating = None
        self.params, self.rebound, self.dtypes, self.annotations = set(), set(), {}, {}

    def _locals(self) -> None:
        """Infer the locals of the bound function: in source order, twice (the second pass
        for uses above a binding, in loops) unless the first read nothing that a second would
        read otherwise. Once per function and way of judging it for every value model of a
        scan phase (``Facts.locals_memo``), unless a recursion was cut on the way."""
        node, self._function = self._function, None
        if node is None:
            return
        key = (id(node), id(self.context), id(self.returns), self.trust_annotations, self.records)
        memo = self.facts.locals_memo if self.arguments is None else {}
        kept = memo.get(key)
        if kept is not None:
            (flow, pins, kinds, timeline, self._previous, params, rebound, dtypes,
             annotations, asked) = kept
            self.flow, self.pins, self.kinds, self.timeline = dict(flow), dict(pins), dict(kinds), \
                dict(timeline)
            self.params, self.rebound, self.dtypes = set(params), set(rebound), dict(dtypes)
            self.annotations = dict(annotations)
            self.asked.update(asked)
            return
        cuts, outer, self.asked = self.facts.cuts, self.asked, set()
        try:
            self._infer(node)
        finally:
            asked, self.asked = self.asked, outer
            outer.update(asked)
        if self.facts.cuts == cuts:
            memo[key] = (dict(self.flow), dict(self.pins), dict(self.kinds), dict(self.timeline),
                         self._previous, set(self.params), set(self.rebound), dict(self.dtypes),
                         dict(self.annotations), asked)

    def _infer(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if arg.annotation is not None:
                self.annotations[arg.arg] = self._annotated(arg.annotation)
            self.params.add(arg.arg)
        bound = bindings(node)
        self.rebound = {name for name, _value, _how, _line in bound}
        for first in (True, False):
            self._reads = [] if first else None
            collected: dict[str, list[Place]] = {}
            pins: dict[str, list[Pin]] = {}
            dtypes: dict[str, list[str | None]] = {}
            # live: a use of another local sees its bindings above it already in this pass,
            # so a chain of locals (``ctx = get(); meta = ctx.meta; x = meta.x``) settles; a
            # binding's value that reads its own name (``meta = meta[k]``) sees the last pass's
            timeline: dict[str, list[tuple[int, Place]]] = {}
            self._previous, self.timeline = self.timeline, timeline
            for name, value, element, line in bound:
                if is_none(value):
                    continue  # x = None first, the real value later
                self._evaluating = name
                if element == "range":
                    place = Place.HOST
                elif element is not None and element.isdigit() and isinstance(value, ast.Call):
                    place = self._returned(value, int(element))
                elif element is not None and element.isdigit() and is_self_attribute(value):
                    record = self.facts.fields.get(value.attr, [])  # type: ignore[union-attr]
                    index = int(element)
                    place = record[index] if index < len(record) else Place.UNKNOWN
                else:
                    place = self.place(value) if value is not None else Place.UNKNOWN
                    if place is Place.HOST and _empty_container(value):
                        place = self._filled(node, name)
                collected.setdefault(name, []).append(place)
                timeline.setdefault(name, []).append((binding_end(value, line), place))
                if value is not None and element is None:
                    if place is not Place.DEVICE:  # q = q.npu(): the host copy's pin stays
                        pins.setdefault(name, []).append(self.pin(value))
                    dtypes.setdefault(name, []).append(self.dtype(value))
                    kind = constructed_kind(value)
                    if kind:
                        self.kinds[name] = kind
            self._evaluating = None
            for name, values in collected.items():
                self.flow[name] = _agree(values, Place.UNKNOWN)
            for name, values in pins.items():
                self.pins[name] = _may_pin(values)
            for name, found in dtypes.items():
                self.dtypes[name] = found[0] if len(set(found)) == 1 else None
            self.timeline = {name: sorted(t, key=_FIRST) for name, t in timeline.items()}
            if first and self._settled():
                self._reads, self._previous = None, self.timeline
                break  # a second pass would read what the first did: it would change nothing

    def _filled(self, func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> Place:
        """``xs = []`` then ``xs.append(codes)`` in a loop: the list holds what is put in it, so
        ``xs[0].device`` and ``for c in xs`` are where the tensors put in are."""
        put = {self.place(item) for item in appended(func).get(name, [])}
        return put.pop() if len(put) == 1 else _combine_strict(put)

    def _settled(self) -> bool:
        """After the first pass of _locals: no read it made of a local before that local's
        bindings were agreed (nothing was known then) would find anything now."""
        return not any(self._known_now(*read) for read in self._reads or ())

    def _known_now(self, what: str, name: str, line: int) -> bool:
        if what == "place":  # the agreed place, or (read while binding it) an earlier binding's
            earlier = [p for end, p in self.timeline.get(name, []) if end < line]
            return self.flow.get(name, Place.UNKNOWN) is not Place.UNKNOWN or bool(
                earlier and earlier[-1] is not Place.UNKNOWN)
        if what == "pin":
            return self.pins.get(name, Pin.UNKNOWN) is not Pin.UNKNOWN
        if what == "dtype":
            return self.dtypes.get(name) is not None
        return name in self.kinds

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
            timeline = self._previous if node.id == self._evaluating else self.timeline
            earlier = [p for line, p in timeline.get(node.id, []) if line < node.lineno]
            if earlier and earlier[-1] is not Place.UNKNOWN:
                return earlier[-1]  # logits = logits.to("cpu"): the later uses see the host copy
            if self._reads is not None:
                self._reads.append(("place", node.id, node.lineno if timeline is self._previous
                                    else 0))
            known = self.flow.get(node.id, Place.UNKNOWN)
            if known is not Place.UNKNOWN:
                return known  # dataflow wins over the name
            if node.id in self.params and node.id not in self.rebound:
                self.asked.add(node.id)
                passed = self.arguments(node.id) if self.arguments is not None else Place.UNKNOWN
                if passed is not Place.UNKNOWN:
                    return passed  # what the call judged passes (a helper's result)
            named = self._name_place(node.id)
            if named is not Place.UNKNOWN:
                return named  # the name wins over a ``torch.Tensor`` annotation (any device)
            return self.annotations.get(node.id, Place.UNKNOWN) if self.trust_annotations \
                else Place.UNKNOWN
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                own = self._owned(self.facts.owner_place, node.attr)
                if own is None and self._in_device_record():
                    # its own field (``CommonAttentionMetadata``'s ``self.query_start_loc``),
                    # not what other records' constructions store in one of that name
                    return self.field_place(node.attr, constructions=False)
                known = own if own is not None else self.facts.place.get(node.attr, Place.UNKNOWN)
                return known if known is not Place.UNKNOWN else self._name_place(node.attr)
            own = self._name_place(node.attr)  # the .cpu / .gpu / .np halves of a staged buffer
            if own is not Place.UNKNOWN and node.attr in ("cpu", "gpu", "np", "numpy"):
                return own
            if self._context_records(node):
                return Place.DEVICE  # the builders' records, by layer: their fields are device
            outer = self.place(node.value)
            if outer is Place.DEVICE:
                # a field of an object the model or sampler returned is on the device with it,
                # unless its record class annotates it as host data
                return self.field_place(node.attr)
            if outer is Place.UNKNOWN and own is Place.UNKNOWN:
                # a record's field: where the scanned constructions of records store it
                return self._stored(node.attr)[0]
            return own
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if is_self_attribute(node.value):
                    memo = self._memo_slot(node.value.attr, key.value)  # type: ignore[attr-defined]
                    if memo is not Place.UNKNOWN:
                        return memo  # self.cache["starts"]: where the class stored it
                keyed = self._name_place(key.value)  # mm_input["image_grid_thw"]
                if keyed is not Place.UNKNOWN:
                    return keyed
            elif not isinstance(key, ast.Slice | ast.Tuple | ast.Constant):
                keyed = self._keyed_element(node.value)
                if keyed is not Place.UNKNOWN:
                    return keyed
            return self.place(node.value)
        if isinstance(node, ast.Starred):
            return self.place(node.value)
        if isinstance(node, ast.Call):
            return self._call_place(node)
        if isinstance(node, ast.BinOp):
            return _combine(self._operands([node.left, node.right]))
        if isinstance(node, ast.UnaryOp):
            return self.place(node.operand)
        if isinstance(node, ast.Compare):
            return _combine(self._operands([node.left, *node.comparators]))
        if isinstance(node, ast.BoolOp):
            return _combine(self.place(v) for v in node.values)
        if isinstance(node, ast.IfExp):
            if _host_either_way(node):
                return Place.HOST  # x.cpu() if x.is_cuda else x
            # x if c else None: the value is x's (None is no host data)
            places = [self.place(v) for v in (node.body, node.orelse) if not is_none(v)]
            return places[0] if len(set(places)) == 1 else _combine(places)
        return Place.UNKNOWN

    def _operands(self, operands: list[ast.expr]) -> list[Place]:
        """The places of an operation's operands that say where its result lives: a literal
        number says nothing (``lens > 0`` is where ``lens`` is), unless all are literals."""
        tensors = [n for n in operands if not isinstance(n, ast.Constant)]
        return [self.place(n) for n in tensors] if tensors else [Place.HOST]

    def pin(self, node: ast.expr) -> Pin:
        if isinstance(node, ast.Name):
            self._locals()
            if self._reads is not None:
                self._reads.append(("pin", node.id, 0))
            return self.pins.get(node.id, Pin.UNKNOWN)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                own = self._owned(self.facts.owner_pin, node.attr)
                return own if own is not None else self.facts.pin.get(node.attr, Pin.UNKNOWN)
            if node.attr == "cpu":
                # the host half of a staged buffer (vLLM's CpuGpuBuffer) is allocated pinned
                return self.facts.pin.get("cpu", Pin.PINNED)
            # blk_table.slot_mapping_cpu: what the scanned classes that store one say, else
            # what the records' constructions store in such a field
            known = self.facts.pin.get(node.attr, Pin.UNKNOWN)
            return known if known is not Pin.UNKNOWN else self._stored(node.attr)[1]
        if isinstance(node, ast.Subscript):
            return Pin.PAGEABLE if self.gathers(node) else self.pin(node.value)
        if isinstance(node, ast.IfExp):
            pins = {self.pin(v) for v in (node.body, node.orelse) if not is_none(v)}
            return pins.pop() if len(pins) == 1 else Pin.UNKNOWN
        if self.host_result(node):
            return Pin.PAGEABLE
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "pin_memory":
                return Pin.PINNED
            if copies_to_host(node):
                # x.cpu() of a device tensor: a new tensor in pageable memory; of a host one: x
                place = self.place(func.value)  # type: ignore[attr-defined]
                return self.pin(func.value) if place is Place.HOST else (  # type: ignore[attr-defined]
                    Pin.PAGEABLE if place is Place.DEVICE else Pin.UNKNOWN)
            if (isinstance(func, ast.Attribute) and func.attr == "to" and not targets_cpu(node)
                    and self.place(func.value) is Place.HOST):
                if not moves_to_device(node):
                    return Pin.PAGEABLE  # x.to(dtype): a converted copy in pageable memory
                if self.stays_pageable(node):
                    return Pin.PAGEABLE
            if isinstance(func, ast.Attribute) and func.attr in _VIEWS:
                return self.pin(func.value)
            name = dotted(func)
            if name == "torch.from_numpy":
                return Pin.PAGEABLE
            if self.returns is not None and not name.startswith(("torch.", "np.", "numpy.")):
                return self.returns.pin(self.context, node, self)  # a helper that allocates it
            if name.startswith("torch.") and name.rpartition(".")[2] in _CREATORS:
                flag = keyword(node, "pin_memory")
                if flag is None and name.endswith("_like"):
                    return Pin.UNKNOWN
                if flag is None:
                    return Pin.PAGEABLE if self._host_allocation(node) else Pin.UNKNOWN
                if isinstance(flag, ast.Constant):
                    return Pin.PINNED if flag.value else Pin.PAGEABLE
                return Pin.PINNED  # pin_memory=self.pin_memory: pinned where pinning is possible
        return Pin.UNKNOWN

    def host_result(self, node: ast.expr) -> bool:
        """A new tensor that a torch op or arithmetic makes of host tensors (``torch.cat(parts)``,
        ``torch.arange(n) * k``): allocated without ``pin_memory``, so pageable whatever its
        operands were, and its ``.to(device, non_blocking=True)`` blocks. Every tensor operand of
        a torch op must be known to be on the host (``torch.where(mask, a, b)`` with one of
        unknown residence may run on the device); in arithmetic the tensor is the leftmost
        operand (``arange(n) * chunk``, ``lens_cpu[:n] - prefix``), which must be known to be on
        the host, and no other operand may be on the device. A tensor method of them
        (``(ends - starts).clamp(min=0)``) is new pageable memory too, as is one of a host
        tensor whose pinning is known."""
        if isinstance(node, ast.BinOp):
            while isinstance(node, ast.BinOp):
                if self.place(node.right) is Place.DEVICE:
                    return False
                node = node.left
            return self.place(node) is Place.HOST
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _NEW_TENSOR_OPS and not dotted(
                func.value).startswith(("torch", "np", "numpy")):
            return self.host_result(func.value) or (  # (ends - starts).clamp(min=0)
                self.place(func.value) is Place.HOST and self.pin(func.value) is not Pin.UNKNOWN)
        name = dotted(func)
        if not node.args or not name.startswith("torch.") or \
                name.rpartition(".")[2] not in _NEW_TENSOR_OPS:
            return False
        return all(self.place(item) is Place.HOST for item in node.args)

    def kind(self, node: ast.expr) -> str | None:
        """``"event"`` / ``"stream"`` for a receiver of ``.synchronize()``, from its origin or name."""
        if isinstance(node, ast.Name):
            self._locals()
            if node.id in self.kinds:
                return self.kinds[node.id]
            if self._reads is not None:
                self._reads.append(("kind", node.id, 0))
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

    def dtype(self, node: ast.expr) -> str | None:
        """The dtype an allocation names (``torch.zeros(n, dtype=torch.int32)``), if any."""
        if isinstance(node, ast.Subscript):
            return self.dtype(node.value)
        if isinstance(node, ast.Name):
            self._locals()
            if self._reads is not None:
                self._reads.append(("dtype", node.id, 0))
            return self.dtypes.get(node.id)
        if is_self_attribute(node):
            own = self._owned(self.facts.owner_dtype, node.attr)  # type: ignore[union-attr]
            return own if own is not None else self.facts.dtype.get(node.attr)  # type: ignore[union-attr]
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _VIEWS:
                return self.dtype(func.value)
            if dotted(func).rpartition(".")[2] in _CREATORS:
                given = keyword(node, "dtype")
                return dotted(given) or None if given is not None else None
        return None

    def contiguous(self, node: ast.expr) -> bool:
        """False for a strided view: ``buf[:, 0]``, ``buf[:n, :k]``, ``buf.t()``, a gather."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _NON_CONTIGUOUS_METHODS:
                return False
            return node.func.attr != "contiguous" and self.contiguous(node.func.value) \
                if node.func.attr in _VIEWS else True
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
            return False
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Tuple):
                items = list(key.elts)
                while items and not isinstance(items[0], ast.Slice) and (
                    isinstance(items[0], ast.Constant) or self.place(items[0]) is Place.HOST
                ):
                    items.pop(0)  # buf[row, :n]: one row of a dense buffer is dense
                # after the first sliced dimension, anything but a full ``:`` strides the view
                for item in items[1:]:
                    full = (isinstance(item, ast.Slice) and item.lower is None
                            and item.upper is None and item.step is None)
                    if not full and not isinstance(item, ast.Constant):
                        return False
                return self.contiguous(node.value)
            if not isinstance(key, ast.Slice | ast.Constant) and self.place(key) is not Place.HOST:
                return False  # buf[index_tensor] gathers into a new, pageable tensor
            if isinstance(key, ast.Slice) and key.step is not None:
                return False
            return self.contiguous(node.value)
        return True

    def bound(self, name: str) -> tuple[ast.expr, str | None] | None:
        """(value, how) of a local bound exactly once in the bound function, else None."""
        return bound_once(self._scope).get(name) if self._scope is not None else None

    def bound_to(self, name: str) -> list[tuple[ast.expr | None, str | None]]:
        """(value, how) of every binding of a local in the bound function (nested ones too)."""
        if self._scope is None:
            return []
        return [(value, how) for local, value, how, _line in bindings(self._scope) if local == name]

    def origin(self, name: str) -> tuple[ast.expr, bool] | None:
        """What a local bound once stands for: ``t = self.a.b`` -> (``self.a.b``, False),
        ``for t in self.tables`` -> (``self.tables``, True: one item of it)."""
        found = self.bound(name)
        if found is None:
            return None
        value, how = found
        if how is None and isinstance(value, ast.Attribute | ast.Subscript):
            return value, False
        if how == "element":
            return value, True
        return None

    def gathers(self, node: ast.expr) -> bool:
        """``buf[rows]`` with a list, an array or a tensor of indices on the host: advanced
        indexing copies the rows into a new tensor (pageable), it is no view of ``buf``."""
        if not isinstance(node, ast.Subscript):
            return False
        keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return any(self._indices(key, 0) for key in keys)

    def _indices(self, node: ast.expr, depth: int) -> bool:
        """A collection of indices (not one index, not a slice, not a mask)."""
        if isinstance(node, ast.List | ast.ListComp):
            return True
        if isinstance(node, ast.Call):
            name = dotted(node.func)
            leaf = name.rpartition(".")[2]
            return name in ("sorted", "list", "tuple") or leaf == "tolist" or (
                name.partition(".")[0] in _NUMPY_MODULES | {"torch"} and leaf in _INDEX_MAKERS)
        if isinstance(node, ast.Name) and depth < 3 and self._scope is not None:
            value, how = bound_once(self._scope).get(node.id, (None, "none"))
            return how is None and value is not None and self._indices(value, depth + 1)
        return False

    def python_indices(self, node: ast.expr, depth: int = 0) -> bool:
        """A Python list (or a numpy array) of indices, not a tensor: a display or comprehension,
        ``sorted(...)`` / ``list(...)`` / ``.tolist()``, a numpy index maker, a local bound once
        to one, or ``self.x`` that its class only ever sets to one."""
        if self.tensor_list(node):
            return False
        if python_list(node):
            return True
        if isinstance(node, ast.Call):
            name = dotted(node.func)
            leaf = name.rpartition(".")[2]
            return leaf == "tolist" or (
                name.partition(".")[0] in _NUMPY_MODULES and leaf in _INDEX_MAKERS)
        if isinstance(node, ast.Name) and depth < 3 and self._scope is not None:
            value, how = bound_once(self._scope).get(node.id, (None, "none"))
            return how is None and value is not None and self.python_indices(value, depth + 1)
        if is_self_attribute(node):
            return bool(self._owned(self.facts.collections, node.attr))  # type: ignore[union-attr]
        return False

    def is_mask(self, node: ast.expr) -> bool:
        """A boolean tensor used as an index: ``x[x > 3]``, ``x[~done]``, ``x[mask]``."""
        if isinstance(node, ast.Compare):
            return not any(isinstance(op, ast.In | ast.NotIn | ast.Is | ast.IsNot)
                           for op in node.ops)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return self.is_mask(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr):
            return self.is_mask(node.left) or self.is_mask(node.right)
        if isinstance(node, ast.Call):
            leaf = node.func.attr if isinstance(node.func, ast.Attribute) else dotted(node.func)
            if leaf in _MASK_OF_MASK and isinstance(node.func, ast.Attribute):
                # codes.ne(pad).any(dim=-1), mask.reshape(-1): a reduction or view of a mask
                receiver = node.func.value
                if dotted(receiver) == "torch":
                    return bool(node.args) and self.is_mask(node.args[0])
                return self.is_mask(receiver)
            return leaf in _MASK_CALLS or (leaf == "to" and dotted(node.args[0] if node.args
                                                                 else node.func) == "torch.bool")
        if isinstance(node, ast.Name):
            self._locals()
            if self._reads is not None:
                self._reads.append(("dtype", node.id, 0))
            return self.dtypes.get(node.id) == "torch.bool" or node.id in self._masks()
        return False

    def _masks(self) -> set[str]:
        """Locals bound once, to a mask expression."""
        found = self._mask_names
        if found is None:
            found = self._mask_names = set()
            if self._scope is not None:
                for name, value, how, _line in bindings(self._scope):
                    if how is None and value is not None and not isinstance(value, ast.Name) \
                            and self.is_mask(value):
                        found.add(name)
        return found

    def param(self, node: ast.expr) -> str | None:
        """The parameter ``node`` derives from (``ids``, ``ids[:n]``, ``out.ids``, ``ids.sum()``)
        when the function never rebinds it; not through a staged half (``buf.cpu``) or a call
        that moves or leaves the tensor (``.cpu()``, ``.to(device)``, ``.size()``)."""
        found = self.derived(node)
        return found[0] if found else None

    def derived(self, node: ast.expr, depth: int = 0) -> tuple[str, str] | None:
        """(parameter, field) ``node`` derives from by dataflow: through slices, views, a
        dtype-only ``.to(torch.long)``, arithmetic whose other operand is host data, and locals
        bound once (``q = start_loc.to(dtype=torch.long); counts = q[1:] - q[:-1]``). ``field``
        is the attribute read off the parameter (``meta.query_start_loc`` -> ``query_start_loc``),
        so a caller's record says where that field lives; "" for the parameter itself. A
        parameter rebound only to a view or conversion of itself (``cu = cu.to(torch.int64)``)
        still derives from what the callers pass."""
        node, field_name = _stripped(node)
        if isinstance(node, ast.BinOp) and depth < 4:
            return self._derived_operands([node.left, node.right], depth)
        if isinstance(node, ast.Compare) and depth < 4:  # (groups == 0).sum(): a mask of groups
            return self._derived_operands([node.left, *node.comparators], depth)
        if not isinstance(node, ast.Name) or node.id == "self":
            return None
        self._locals()
        if node.id in self.params:
            return (node.id, field_name) if node.id not in self.rebound \
                or self._converted_in_place(node.id) or self._before_rebinding(node) else None
        found = self.bound(node.id)
        if found is None or found[1] is not None or depth >= 4:
            return None
        upstream = self.derived(found[0], depth + 1)
        return None if upstream is None else (upstream[0], upstream[1] or field_name)

    def _before_rebinding(self, node: ast.Name) -> bool:
        """A parameter read before any rebinding of it takes effect, outside loops
        (``cu = cu.cpu()`` reads the caller's ``cu``): still what the callers pass."""
        scope = self._scope
        if scope is None:
            return False
        if any(binding_end(value, line) < node.lineno
               for name, value, _how, line in bindings(scope) if name == node.id):
            return False
        return not any(isinstance(n, ast.For | ast.While | ast.AsyncFor)
                       and n.lineno <= node.lineno <= (n.end_lineno or n.lineno)
                       for n in walk(scope))

    def _converted_in_place(self, name: str) -> bool:
        """Every binding of parameter ``name`` is a view or conversion of ``name`` itself."""
        bound = self.bound_to(name)
        return bool(bound) and all(
            how is None and value is not None and (stripped := _stripped(value))[1] == ""
            and isinstance(stripped[0], ast.Name) and stripped[0].id == name
            for value, how in bound)

    def _derived_operands(self, operands: list[ast.expr], depth: int) -> tuple[str, str] | None:
        """``a - b`` (or ``a == 0``) derives from one parameter when every operand does, or
        some do and the others are host data (``q[:-1] + 1``)."""
        sides = [self.derived(side, depth + 1) for side in operands]
        known = {s for s in sides if s is not None}
        if len(known) != 1:
            return None
        if any(side is None and self.place(operand) is not Place.HOST
               for side, operand in zip(sides, operands, strict=True)):
            return None
        return known.pop()

    # -- helpers ------------------------------------------------------------------------------

    def stays_pageable(self, call: ast.Call) -> bool:
        """``x.to(cu)`` of a pageable host ``x`` where the caller's ``cu`` is a host tensor (FLA's
        ``prepare_chunk_indices`` hands its table back ``.to(cu_seqlens)``): ``x`` stays, or is
        converted, on the host, in pageable memory either way, so uploading the result blocks."""
        return self.place(call) is Place.HOST and \
            self.pin(call.func.value) is Pin.PAGEABLE  # type: ignore[attr-defined]

    def tensor_list(self, node: ast.expr) -> bool:
        """``[rows, cols]`` of device index tensors: as an index it is a tuple of them
        (``logprobs[[rows, cols]]``), advanced indexing on the device with nothing uploaded."""
        return isinstance(node, ast.List) and any(self.place(e) is Place.DEVICE
                                                  for e in node.elts)

    def int_attribute(self, attr: str) -> bool:
        """``self.attr`` holds a Python int wherever the class sets it."""
        return bool(self._owned(self.facts.ints, attr))

    def _owned(self, table: dict, attr: str):  # type: ignore[no-untyped-def]
        """What the class of the bound method (or its nearest base) says about ``self.attr``."""
        return owned(table, getattr(self.context, "owner", None), attr)

    def _annotated(self, annotation: ast.expr) -> Place:
        """An annotation's place; a record of ``[values] device_records`` (``meta:
        CommonAttentionMetadata``, also ``X | None``, ``Optional[X]``) holds device tensors:
        its fields are device unless annotation or name says host (:meth:`field_place`)."""
        place = annotation_place(annotation)
        if place is Place.UNKNOWN and self.records:
            while isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
                annotation = annotation.right if is_none(annotation.left) else annotation.left
            if isinstance(annotation, ast.Subscript) and dotted(annotation.value).endswith(
                    "Optional"):
                annotation = annotation.slice
            if self.config.device_records.match(dotted(annotation).rpartition(".")[2]):
                return Place.DEVICE
        return place

    def _context_records(self, node: ast.Attribute) -> bool:
        """``get_forward_context().attn_metadata`` (``[values] context_records``), also read
        off a local bound to the call: the records the step's builders made, by layer."""
        for entry in self.config.context_records:
            call, _, attr = entry.partition(".")
            if node.attr != attr:
                continue
            value = node.value
            if isinstance(value, ast.Name) and self._scope is not None:
                bound = self.bound_to(value.id)
                if bound and all(isinstance(v, ast.Call) and how is None
                                 and dotted(v.func).rpartition(".")[2] == call for v, how in bound):
                    return True
            elif isinstance(value, ast.Call) and dotted(value.func).rpartition(".")[2] == call:
                return True
        return False

    def field_place(self, attr: str, constructions: bool = True) -> Place:
        """A field of a device-computed record: its annotation, else (with ``constructions``)
        what the scanned constructions of records store in it, else its name, else device."""
        annotated = self.facts.annotated.get(attr)
        if annotated is not None:
            return annotated
        stored = self._stored(attr)[0] if constructions else Place.UNKNOWN
        if stored is not Place.UNKNOWN:
            return stored
        named = self._name_place(attr)
        return named if named is not Place.UNKNOWN else Place.DEVICE

    def _in_module(self) -> bool:
        """The bound function is a method of an ``nn.Module`` (a model or layer class): its
        unscanned ``self.<layer>(x)`` calls are layers, computing where their input lives."""
        owner = getattr(self.context, "owner", None)
        return owner is not None and any(
            dotted(base).rpartition(".")[2] == "Module" for base in owner.node.bases)

    def _in_device_record(self) -> bool:
        """The bound function is a method of a ``[values] device_records`` class (its own
        ``self.seq_lens`` is the record's field, not the runners' attribute of that name)."""
        owner = getattr(self.context, "owner", None)
        return owner is not None and self.config.device_records.match(owner.name)

    def _stored(self, attr: str) -> tuple[Place, Pin]:
        """What the scanned constructions of records store in field ``attr``."""
        stored = self.facts.stored
        return stored(attr) if stored is not None else (Place.UNKNOWN, Pin.UNKNOWN)

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
            and (self.config.device_modules.match(chain[1]) or chain[1] in self.facts.model_attrs)
        )

    def _keyed_element(self, container: ast.expr) -> Place:
        """``self.graphs[size]`` / ``self.graphs.get(size)``: an item of a dict the class fills
        under computed keys (``self.graphs[size] = torch.empty(..., device=d)``, the way CUDA-graph
        wrappers keep static inputs per batch size) lives where those stores put it, whatever
        the empty display the dict started as says. Not for a device tensor's own elements."""
        if not is_self_attribute(container) or self.place(container) is Place.DEVICE:
            return Place.UNKNOWN
        return self._memo_slot(container.attr, ANY_KEY)  # type: ignore[attr-defined]

    def _memo_slot(self, attr: str, key: str) -> Place:
        """``self.cache["starts"]``: a dict the object memoises values in by key (a builder keeps
        this step's device tensors there on its first build and reads them back on the next
        build of the same step), so a read by that key lives where every store of the bound
        method's class under that key (``self.cache["starts"] = starts``) puts the value, each
        judged in its own method as a ``self.x = ...`` store is (a field of a device record
        parameter is a device tensor); stores that disagree, or none, say nothing. Judged on demand,
        once per class, dict and key; a store that reads its own slot back is a recursion."""
        owner = getattr(self.context, "owner", None)
        if owner is None:
            return Place.UNKNOWN
        slot = (id(owner), attr, key)
        memo = self.facts.memo_slots
        if slot in memo:
            if memo[slot] is None:
                self.facts.cuts += 1
                return Place.UNKNOWN
            return memo[slot]  # type: ignore[return-value]
        memo[slot] = None  # being judged
        places: set[Place] = set()
        models: dict[int, ValueModel] = {}  # one per storing method
        for method, value in keyed_stores(owner, self.facts.keyed).get((attr, key), ()):
            model = models.get(id(method))
            if model is None:
                model = models[id(method)] = ValueModel(self.config, self.facts, self.returns)
                model.records = True  # judged as the attribute pass judges stores
                model.bind_function(method.node, method)
            places.add(model.place(value))
        found = places.pop() if len(places) == 1 else Place.UNKNOWN
        memo[slot] = found
        return found

    def _to_argument(self, target: ast.expr) -> Place:
        """``x.to(cu_seqlens)`` with ``cu_seqlens`` a parameter: ``x`` goes where the caller's
        tensor lives. Unknown in the helper alone; when a call judges the helper again for its
        arguments (``prepare(cu.cpu(), 64)``), the tensor it passes decides: a host one keeps
        the result on the host, so a later ``.npu()`` of it is an upload of a fresh host
        tensor, not a no-op on a device one."""
        param = self.param(target)
        if param is None:
            return Place.UNKNOWN
        self.asked.add(param)
        return self.arguments(param) if self.arguments is not None else Place.UNKNOWN

    def to_host_device(self, call: ast.Call) -> bool:
        """``x.to(t.device)`` / ``x.to(device=t.device)`` of a host tensor ``t``: no device."""
        target = _device_target(call)
        return isinstance(target, ast.Attribute) and target.attr == "device" and \
            self.place(target.value) is Place.HOST

    def _to_device_of_device(self, call: ast.Call) -> bool:
        """``x.to(t.device)``, ``x.to(device=dev)`` after ``dev = t.device``, of a device tensor
        ``t``: the copy lands on the device (a model moving its input to its embeddings')."""
        target = _device_target(call)
        if isinstance(target, ast.Name) and self._scope is not None:
            bound = self.bound_to(target.id)
            target = bound[0][0] if len(bound) == 1 and bound[0][1] is None else target
        if not (isinstance(target, ast.Attribute) and target.attr == "device"):
            return False
        return self.place(target.value) is Place.DEVICE or _module_weights(target.value)

    def _host_allocation(self, call: ast.Call) -> bool:
        """No device, ``"cpu"``, or the device of a host value (``device=lens_cpu.device``:
        a padding row appended to a host tensor stays on the host)."""
        device = keyword(call, "device")
        if isinstance(device, ast.Attribute) and device.attr == "device":
            return self.place(device.value) is Place.HOST
        return device is None or (isinstance(device, ast.Constant) and device.value == "cpu")

    def _returned(self, call: ast.Call, element: int | None) -> Place:
        """What a scanned function returns (``element``: one item of a returned tuple)."""
        if self.returns is None:
            return Place.UNKNOWN
        return self.returns(self.context, call, element, self)

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
            if leaf.endswith("_like") and keyword(node, "device") is None and node.args:
                return self.place(node.args[0])  # empty_like(x): where x is
            if leaf in _CREATORS:
                if keyword(node, "pin_memory") is not None or self._host_allocation(node):
                    return Place.HOST
                return Place.DEVICE
            return _combine(self._operands(node.args))  # index_select(x, 0, i): 0 says nothing
        if self._runs_on_device(func):
            return Place.DEVICE
        leaf = name.rpartition(".")[2]
        if node.args and self.config.arithmetic.match(leaf):
            return _combine(self._operands(node.args[:1]))  # cdiv(lens, 64): where lens is
        if node.args and any(c in leaf for c in _COLLECTIVES):
            returned = self._returned(node, None)
            return returned if returned is not Place.UNKNOWN else self.place(node.args[0])
        if isinstance(func, ast.Attribute):
            method = func.attr
            if method in _HOST_METHODS:
                return Place.HOST
            key = node.args[0] if method == "get" and node.args else None
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keyed = self._name_place(key.value)  # mm_input.get("image_grid_thw", [])
                if keyed is not Place.UNKNOWN:
                    return keyed
            elif key is not None:
                keyed = self._keyed_element(func.value)  # self.graphs.get(size)
                if keyed is not Place.UNKNOWN:
                    return keyed
            if method in _DEVICE_METHODS:
                return Place.DEVICE
            if method == "to":
                if targets_cpu(node):
                    return Place.HOST
                if to_parameter(self, node):
                    return self._to_argument(node.args[0])
                if self.to_host_device(node):
                    return Place.HOST  # x.to(lens_cpu.device): where a host tensor lives
                if self._to_device_of_device(node):
                    return Place.DEVICE  # x.to(dev), dev = embeds.device: where that one lives
                receiver = self.place(func.value)
                return Place.DEVICE if receiver is Place.HOST and moves_to_device(node) \
                    else receiver
            if isinstance(func.value, ast.Name) and func.value.id == "self":
                returned = self._returned(node, None)
                if returned is not Place.UNKNOWN:
                    return returned
                if node.args and self._in_module() and self.place(node.args[0]) is Place.DEVICE:
                    return Place.DEVICE  # self.text_projection(embeds): a layer computes there
            receiver = self.place(func.value)
            if receiver is Place.UNKNOWN and isinstance(func.value, ast.Name):
                returned = self._returned(node, None)  # a method of a parameter's scanned class
                if returned is not Place.UNKNOWN:
                    return returned
            if receiver is Place.DEVICE and not tensor_or_container_method(method):
                # tables[gid].get_numpy_array(): no tensor has the method, so the receiver is an
                # object (a record of device tensors, or one judged by a field's name); where the
                # method's result lives is what the method returns, where the scan can follow it
                returned = self._returned(node, None)
                if returned is not Place.UNKNOWN:
                    return returned
            return receiver if receiver is not Place.UNKNOWN else self._name_place(method)
        return self._returned(node, None)


def _host_either_way(node: ast.IfExp) -> bool:
    """``x.cpu() if x.is_cuda else x`` (``x.device.type != "cpu"``, ``x.is_npu``): the host copy
    where ``x`` is on the accelerator, ``x`` itself only where it is already on the host."""
    test, body, orelse = node.test, node.body, node.orelse
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if negated:  # x if not x.is_cuda else x.cpu()
        test, body, orelse = test.operand, orelse, body
    if not (isinstance(body, ast.Call) and copies_to_host(body)):
        return False
    subject = dotted(body.func.value)  # type: ignore[attr-defined]
    if not subject or dotted(orelse) != subject:
        return False
    if isinstance(test, ast.Attribute) and test.attr in ("is_cuda", "is_npu", "is_xpu"):
        return dotted(test.value) == subject
    return (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.NotEq) and dotted(test.left) == f"{subject}.device.type"
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "cpu")


@cache
def _tensor_methods() -> frozenset[str]:
    """torch.Tensor's public attributes (``scan/tensor_methods.toml``), and Python's container
    methods: a call of anything else on a value is a call on an object that is no tensor."""
    containers = {name for kind in (dict, list, tuple, set, str) for name in dir(kind)}
    return frozenset(packaged_table("tensor_methods.toml")["methods"]) | frozenset(containers)


def tensor_or_container_method(method: str) -> bool:
    return method.startswith("_") or method in _tensor_methods()


def _device_target(call: ast.Call) -> ast.expr | None:
    """Where ``x.to(...)`` is told to go: its ``device=`` or its first argument."""
    return keyword(call, "device") or (call.args[0] if call.args else None)


def _module_weights(node: ast.expr) -> bool:
    """``next(self.parameters())``, ``next(self.buffers())``: a weight of the module itself,
    which the loader put on the device (``x.to(next(self.parameters()).device)``)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "next" and len(node.args) == 1
            and isinstance(node.args[0], ast.Call) and dotted(node.args[0].func)
            in ("self.parameters", "self.buffers"))


def _may_pin(found: list[Pin]) -> Pin:
    """A local's pinning over its bindings: a local rebound to a new pageable tensor on some
    path (``q = torch.cat([q, pad])`` under ``if padded:``) may be pageable where it is copied,
    and that path's upload blocks; otherwise the bindings must agree."""
    return Pin.PAGEABLE if Pin.PAGEABLE in found else _agree(found, Pin.UNKNOWN)


def _stripped(node: ast.expr) -> tuple[ast.expr, str]:
    """(the value ``node`` is a slice, view, field or same-place conversion of, the last field
    read on the way): ``meta.starts[1:].long()`` -> (``meta``, ``starts``)."""
    field_name = ""
    while True:
        staged = isinstance(node, ast.Attribute) and node.attr in ("cpu", "gpu", "np")
        if isinstance(node, ast.Subscript | ast.Attribute) and not staged:
            if isinstance(node, ast.Attribute):
                field_name = node.attr
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr not in _HOST_METHODS
            and node.func.attr not in _DEVICE_METHODS
            and (node.func.attr != "to" or not (moves_to_device(node) or targets_cpu(node)))
        ):
            node = node.func.value
        elif isinstance(node, ast.IfExp) and (is_none(node.body) or is_none(node.orelse)):
            node = node.orelse if is_none(node.body) else node.body  # None if c else x
        else:
            return node, field_name


def binding_end(value: ast.expr | None, line: int) -> int:
    """The line a binding takes effect after: where its value ends, not where it starts."""
    end = getattr(value, "end_lineno", None) or line
    return max(line, end)


def self_slot(node: ast.expr | None) -> tuple[str, str] | None:
    """``self.x`` -> (x, ""), ``self.cache["k"]`` -> (cache, k): a read of one of the object's
    own slots."""
    if node is not None and is_self_attribute(node):
        return node.attr, ""  # type: ignore[union-attr]
    if isinstance(node, ast.Subscript) and is_self_attribute(node.value) and isinstance(
            node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.value.attr, node.slice.value  # type: ignore[attr-defined]
    return None


# the key of ``self.graphs[size] = value``: a store under a key the source computes
ANY_KEY = "[]"
# id of a class -> (dict attr, key) -> (method, value) of each ``self.attr["key"] = value``
KeyedStores = dict[int, dict[tuple[str, str], list[tuple[FunctionInfo, ast.expr]]]]


def keyed_stores(owner: ClassInfo, index: KeyedStores) -> dict[tuple[str, str],
                                                              list[tuple[FunctionInfo, ast.expr]]]:
    """A class's stores into its dicts by key, in method and walk order: found in one walk of
    its methods, then kept in ``index`` for every slot asked about after."""
    found = index.get(id(owner))
    if found is None:
        found = index[id(owner)] = {}
        for method in owner.methods.values():
            for node in walk(method.node):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if not isinstance(target, ast.Subscript):
                            continue
                        slot = self_slot(target)
                        if slot is None and is_self_attribute(target.value):
                            slot = target.value.attr, ANY_KEY  # type: ignore[attr-defined]
                        if slot is not None:
                            found.setdefault(slot, []).append((method, node.value))
    return found


def record_fields(node: ast.ClassDef) -> list[Place]:
    """Place of each annotated field of a record class body, in order."""
    return [
        annotation_place(item.annotation)
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    ]


def annotation_place(annotation: ast.expr) -> Place:
    """Host for ``int``/``list``/``np.ndarray``, device for ``torch.Tensor``, else unknown."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        parts = [annotation_place(annotation.left), annotation_place(annotation.right)]
        known = [p for p in parts if p is not Place.UNKNOWN]
        return known[0] if known and all(p is known[0] for p in known) else Place.UNKNOWN
    if isinstance(annotation, ast.Constant) and is_none(annotation):
        return Place.UNKNOWN
    name = dotted(annotation)
    if name in _TENSOR_ANNOTATIONS:
        return Place.DEVICE
    if isinstance(annotation, ast.Subscript) and not name.endswith("NDArray"):
        # dict[int, torch.Tensor]: a host container of tensors says nothing about where they
        # live (an item read off it is a tensor); list[int] is host data
        inner = annotation.slice
        items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        if any(annotation_place(item) is Place.DEVICE for item in items):
            return Place.UNKNOWN
    if name in _HOST_ANNOTATIONS or name.rpartition(".")[2] in _HOST_ANNOTATIONS:
        return Place.HOST
    return Place.UNKNOWN


Binding = tuple[str, ast.expr | None, str | None, int]


def bindings(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Binding]:
    """(name, value, how, line) for each local binding in source order; ``how`` marks
    loop/unpacked elements.

    Kept on the function node: the scan asks for each function's locals several times (attribute
    facts, the walk, return values), and a walk of the whole body is most of a walk's cost.
    """
    found: list[Binding] | None = getattr(func, "_syncgate_bindings", None)
    if found is None:
        found = []
        for node in walk(func):
            if not isinstance(node, _BINDERS):
                continue
            line = getattr(node, "lineno", None)
            if line is None:  # a comprehension: bound where its first name is
                line = getattr(node.target, "lineno", 0) if isinstance(node, ast.comprehension) \
                    else 0
            found.extend((name, value, how, line) for name, value, how in _bindings_of(node))
        found.sort(key=lambda binding: binding[3])  # source order: a chain settles in one pass
        func._syncgate_bindings = found  # type: ignore[union-attr]
    return found


def owned(table: dict[tuple[int, str], _T], owner: ClassInfo | None, attr: str) -> _T | None:
    """What ``table`` says about ``self.attr`` for ``owner`` or its nearest base that has it."""
    stack, seen = ([owner] if owner is not None else []), set()
    while stack:
        cls = stack.pop(0)
        if id(cls) in seen:
            continue
        seen.add(id(cls))
        found = table.get((id(cls), attr))
        if found is not None:
            return found
        stack.extend(cls.bases)
    return None


def appended(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[ast.expr]]:
    """Local name -> the values ``name.append(v)`` / ``name.insert(i, v)`` / ``name.extend(vs)``
    (one item of ``vs``) put into it, anywhere in the function. Kept on the node."""
    found: dict[str, list[ast.expr]] | None = getattr(func, "_syncgate_appended", None)
    if found is None:
        found = {}
        for node in walk(func):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.args):
                continue
            method, name = node.func.attr, node.func.value.id
            if method == "append":
                found.setdefault(name, []).append(node.args[0])
            elif method == "insert" and len(node.args) == 2:
                found.setdefault(name, []).append(node.args[1])
            elif method == "extend":
                found.setdefault(name, []).append(ast.Starred(value=node.args[0]))
        func._syncgate_appended = found  # type: ignore[union-attr]
    return found


# Builtins and tensor methods whose result is never None: a size, a count, a number.
_NEVER_NONE_CALLS = frozenset({"int", "float", "bool", "str", "len", "max", "min", "sum", "abs",
                               "round", "list", "tuple", "dict", "set", "sorted", "range",
                               "math.ceil", "math.floor", "math.prod"})
_NEVER_NONE_METHODS = frozenset({"size", "numel", "dim", "item", "tolist", "stride"})


def never_none(node: ast.expr | None, scope: ast.FunctionDef | ast.AsyncFunctionDef,
               depth: int = 3) -> bool:
    """``node``, evaluated in ``scope``, is never None: a literal, arithmetic, a size or count
    (``x.size(1)``, ``x.shape[0]``, ``len(...)``, ``max(1, int(n))``), or a local whose every
    binding in ``scope`` is one of those. A parameter, an attribute or an unknown call may be
    None; so may a local bound by unpacking or a loop."""
    if node is None or depth < 0:
        return False
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, ast.BinOp | ast.UnaryOp | ast.Compare | ast.JoinedStr | ast.List
                  | ast.Tuple | ast.Set | ast.Dict | ast.ListComp | ast.SetComp | ast.DictComp
                  | ast.GeneratorExp | ast.Lambda):
        return True
    if isinstance(node, ast.IfExp):
        return never_none(node.body, scope, depth) and never_none(node.orelse, scope, depth)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return never_none(node.values[-1], scope, depth)  # a truthy part is no None either
    if isinstance(node, ast.Call):
        func = node.func
        return dotted(func) in _NEVER_NONE_CALLS or (
            isinstance(func, ast.Attribute) and func.attr in _NEVER_NONE_METHODS)
    if isinstance(node, ast.Attribute):
        return node.attr == "shape"
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
    if isinstance(node, ast.Name):
        args = scope.args
        if node.id in {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}:
            return False  # a parameter: what its own callers pass
        found = [(value, how) for name, value, how, _line in bindings(scope) if name == node.id]
        return bool(found) and all(how is None and never_none(value, scope, depth - 1)
                                   for value, how in found)
    return False


def member_sets(nodes: Iterable[ast.AST]) -> list[tuple[str, ast.expr]]:
    """``(attr, value)`` of every ``self.attr = value`` under ``nodes``."""
    return [(target.attr, node.value) for root in nodes for node in walk(root)
            if isinstance(node, ast.Assign) for target in node.targets if is_self_attribute(target)]


def python_list(node: ast.expr | None) -> bool:
    """A Python list made here: a display, a comprehension, ``list(...)`` or ``sorted(...)``."""
    return isinstance(node, ast.List | ast.ListComp) or (
        isinstance(node, ast.Call) and dotted(node.func) in ("list", "sorted"))


def _empty_container(node: ast.expr | None) -> bool:
    """``[]``, ``{}``, ``list()``, ``dict()``: a container whose items come later."""
    if isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict):
        return not (node.values if isinstance(node, ast.Dict) else node.elts)
    return isinstance(node, ast.Call) and dotted(node.func) in ("list", "dict") and not node.args


def bound_once(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[ast.expr, str | None]]:
    """Locals bound exactly once, to a value: name -> (value, how). Kept on the node."""
    found: dict | None = getattr(func, "_syncgate_once", None)
    if found is None:
        counts: dict[str, int] = {}
        values: dict[str, tuple[ast.expr, str | None]] = {}
        for name, value, how, _line in bindings(func):
            counts[name] = counts.get(name, 0) + 1
            if value is not None:
                values[name] = (value, how)
        found = {name: v for name, v in values.items() if counts[name] == 1}
        func._syncgate_once = found  # type: ignore[union-attr]
    return found


_BINDERS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor,
            ast.comprehension)


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
        elif isinstance(value, ast.Call) or is_self_attribute(value):
            for position, element in enumerate(target.elts):
                for name in _names(element):
                    yield name, value, str(position)  # item ``position`` of what the call returns
        else:
            for name in _names(target):
                yield name, value, "element"


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in walk(target) if isinstance(n, ast.Name)]

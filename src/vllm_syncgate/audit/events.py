"""The shared vocabulary: kinds of sync, kinds of step, call sites, events.

A call site is the first frame outside torch and syncgate, because that is the line an engineer
has to change. It carries ``module:qualname`` so allow-lists survive line-number drift between
upstream versions, and, when the frame runs a method, the same-named methods that method overrides
along ``type(self).__mro__`` (so an allow rule may cover a method's overrides in subclasses).
"""

from __future__ import annotations

import enum
import functools
import os
import sys
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any


class SyncKind(str, enum.Enum):
    """How the host waited on the device."""

    DEVICE_SYNC = "device_sync"  # torch.{cuda,npu,accelerator}.synchronize()
    STREAM_SYNC = "stream_sync"  # Stream.synchronize()
    EVENT_SYNC = "event_sync"  # Event.synchronize()
    BLOCKING_READBACK = "blocking_readback"  # .tolist()/.item()/.cpu()/.numpy()/bool() of a device tensor
    BLOCKING_COPY = "blocking_copy"  # a copy that the host has to wait for (pageable or non_blocking=False)

    def __str__(self) -> str:
        return self.value


class StepKind(str, enum.Enum):
    """What a runner step did, from its scheduled tokens."""

    PREFILL = "prefill"
    DECODE = "decode"
    MIXED = "mixed"
    EMPTY = "empty"
    OUTSIDE = "outside"  # not inside any step: load, warm-up, capture, shutdown

    def __str__(self) -> str:
        return self.value

    @classmethod
    def classify(cls, num_prefill_tokens: int, num_decode_tokens: int) -> StepKind:
        """Name a step from how many of its scheduled tokens are prompt and generated tokens."""
        if num_prefill_tokens and num_decode_tokens:
            return cls.MIXED
        if num_prefill_tokens:
            return cls.PREFILL
        if num_decode_tokens:
            return cls.DECODE
        return cls.EMPTY


SYNC_KINDS: tuple[str, ...] = tuple(k.value for k in SyncKind)
# Step meta key: how many of the step's requests asked for sample logprobs (absent: none, or a
# runner whose batch the backend cannot read). Budgets' ``logprobs_only`` rules apply only there.
LOGPROB_REQS = "logprob_reqs"


@dataclass(frozen=True)
class CallSite:
    """Where a sync was issued: file:line:function, plus module:qualname for allow-lists."""

    file: str
    line: int
    function: str
    module: str = ""
    qualname: str = ""
    # ``module:qualname`` of the same-named methods this frame's method overrides, nearest first
    overrides: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.function}"

    @property
    def symbol(self) -> str:
        """``module:qualname``, the form budgets allow-list."""
        return f"{self.module}:{self.qualname or self.function}"

    @classmethod
    def from_frame(cls, frame: FrameType) -> CallSite:
        code = frame.f_code
        return cls(
            file=source_file(code.co_filename),
            line=frame.f_lineno,
            function=code.co_name,
            module=str(frame.f_globals.get("__name__", "")),
            qualname=getattr(code, "co_qualname", code.co_name),
            overrides=_frame_overrides(frame),
        )

    @classmethod
    def unknown(cls) -> CallSite:
        return cls(file="<unknown>", line=0, function="<unknown>")


@functools.lru_cache(maxsize=4096)
def source_file(filename: str) -> str:
    """The file a user edits for code run from ``filename``: a ``--source`` tree's module runs
    through a symlink in its overlay (a cache folder), and is reported at the tree's own file."""
    try:
        return os.path.realpath(filename) if os.path.islink(filename) else filename
    except OSError:
        return filename


_OVERRIDES: dict[tuple[type, CodeType], tuple[str, ...]] = {}


def overridden_methods(cls: type, code: CodeType) -> tuple[str, ...]:
    """What the method with ``code`` overrides when called on a ``cls`` instance.

    The class along ``cls.__mro__`` that defines the method by this very code object (looking
    through ``functools.wraps`` wrappers) is its owner; the same-named methods of the classes after
    it are what it overrides, each named like a call site in it would be (the function's
    ``module:qualname``). A function that no class in the MRO defines (bound to one instance, a
    free function) overrides nothing. Cached per (class, code).
    """
    key = (cls, code)
    found = _OVERRIDES.get(key)
    if found is None:
        name = code.co_name
        mro = cls.__mro__
        owner = next((i for i, c in enumerate(mro) if _innermost(vars(c).get(name), code)), None)
        found = () if owner is None else tuple(
            _symbol(_innermost(vars(base)[name]), base, name)
            for base in mro[owner + 1:] if name in vars(base)
        )
        _OVERRIDES[key] = found
    return found


def _innermost(attr: Any, code: CodeType | None = None) -> Any:
    """The function under ``functools.wraps`` layers, or (given ``code``) the layer running it."""
    for _ in range(8):  # a few layers at most
        inner = getattr(attr, "__wrapped__", None)
        if code is not None and getattr(attr, "__code__", None) is code:
            return attr
        if inner is None:
            return None if code is not None else attr
        attr = inner
    return None


def _symbol(fn: Any, cls: type, name: str) -> str:
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}:{qualname}"
    return f"{cls.__module__}:{cls.__qualname__}.{name}"


def _frame_overrides(frame: FrameType) -> tuple[str, ...]:
    """:func:`overridden_methods` for the method a frame runs, from its first argument's type."""
    code = frame.f_code
    if not code.co_argcount:
        return ()
    first = frame.f_locals.get(code.co_varnames[0])
    return () if first is None else overridden_methods(type(first), code)


_SKIPPED_PREFIXES = ("torch", "vllm_syncgate", "contextlib", "functools", "typing")
# Runner variants shipped for mutant proofs: their lines are the call sites to report.
_RUNNER_CODE = ("vllm_syncgate.audit.mutants",)


def _is_internal(module: str) -> bool:
    if module in _RUNNER_CODE:
        return False
    return any(module == p or module.startswith(p + ".") for p in _SKIPPED_PREFIXES)


def caller_site(skip: int = 1) -> CallSite:
    """The first frame outside torch and syncgate, starting ``skip`` frames above the caller.

    Test modules of syncgate itself (``tests.``/``test_*``) count as outside, so mutants written in
    the tests are reported at their own lines.
    """
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if not _is_internal(module):
            return CallSite.from_frame(frame)
        frame = frame.f_back
    return CallSite.unknown()


@dataclass(frozen=True)
class SyncEvent:
    """One host wait on the device."""

    kind: SyncKind
    api: str
    site: CallSite
    step: int | None = None
    step_kind: StepKind = StepKind.OUTSIDE
    blocked_s: float = 0.0
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        # Spelled out rather than dataclasses.asdict, which deep-copies: the live audit
        # serialises every event of every step inside the server's decode loop.
        site = self.site
        return {
            "kind": self.kind.value,
            "api": self.api,
            "site": {
                "file": site.file,
                "line": site.line,
                "function": site.function,
                "module": site.module,
                "qualname": site.qualname,
                "overrides": list(site.overrides),
                "where": str(site),
            },
            "step": self.step,
            "step_kind": self.step_kind.value,
            "blocked_s": self.blocked_s,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SyncEvent:
        site = {k: v for k, v in data["site"].items() if k != "where"}
        site["overrides"] = tuple(site.get("overrides", ()))
        return cls(
            kind=SyncKind(data["kind"]),
            api=data["api"],
            site=CallSite(**site),
            step=data.get("step"),
            step_kind=StepKind(data.get("step_kind", "outside")),
            blocked_s=float(data.get("blocked_s", 0.0)),
            detail=data.get("detail", ""),
        )

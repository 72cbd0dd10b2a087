"""Which functions of one package ran during a block: measured with the interpreter's trace hook,
not guessed, so that ``check --source`` can name a branch's changed method that no unit probe ran
instead of passing it (:mod:`vllm_syncgate.check.unprobed`).

Only call events are taken: the hook returns no local tracer (no line events) and looks at each
code object once: vLLM 0.32.0's probes take 0.48 s CPU traced vs 0.34 s untraced, median of 5
each (``benchmarks/bench_unit_trace.py``). Threads started inside the block are traced too.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from types import CodeType, FrameType, TracebackType
from typing import Any


class FunctionsRun:
    """``with FunctionsRun(root) as ran:`` ... ``ran.functions()``: the functions of the files
    under ``root`` (the package directory as imported) that were called in the block."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = str(root) + os.sep
        self._seen: dict[CodeType, bool] = {}  # every code object called: is it under root?
        self._before: tuple[Any, Any] = (None, None)

    def __enter__(self) -> FunctionsRun:
        self._before = (sys.gettrace(), threading.gettrace())  # a debugger's, coverage's
        threading.settrace(self._call)
        sys.settrace(self._call)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        sys.settrace(self._before[0])
        threading.settrace(self._before[1])

    def _call(self, frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code not in self._seen:
            self._seen[code] = code.co_filename.startswith(self._prefix)

    def functions(self) -> list[tuple[str, str]]:
        """``(file relative to root, qualname)`` of each named function that ran, sorted; module
        bodies, lambdas and comprehensions (``<...>``) are left out."""
        return sorted({(Path(code.co_filename).relative_to(self.root).as_posix(), code.co_qualname)
                       for code, inside in self._seen.items()
                       if inside and not code.co_name.startswith("<")})

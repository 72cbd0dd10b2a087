"""Streams, copy engines and host threads of the simulated accelerator: who waits, for how long.

Work on a stream is a FIFO of operations, each with a simulated duration and an optional action
(the write of an asynchronous device-to-host copy). Actions run only when the host waits for them:
an event, stream or device synchronize, or an implicit blocking operation. Until then a pinned host
buffer keeps its poison, exactly the window in which real code would read garbage.

The clock is simulated and follows what an H200 measured (``vllm_syncgate.calibrate``, data
``h200.toml``):

- Each host thread has its own time, which moves only when that thread waits.
- A stream runs its work in order. The legacy default stream (the one every thread starts on) is
  ordered after all work queued before on *blocking* streams and they after it; streams made by
  ``torch.cuda.Stream()`` are non-blocking and run independently.
- Copies go through one copy engine per direction (device-to-host, also serving device-to-device;
  host-to-device), each serving one copy at a time in the order the copies become ready.
- A blocking readback is a device-to-host memcpy on the calling thread's current stream: it waits
  for that stream (and what the stream is ordered after), not for every stream.
- While a thread is inside a blocking device-to-host memcpy into pageable memory, every other
  thread's copy call is held until that memcpy returns (:class:`Hold`). That cost lands on the
  *other* thread; it is the stall of vLLM issue #22754, and the ledger keeps it apart from
  host-blocked time.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

from vllm_syncgate.errors import SimulatorError

Action = Callable[[], None]
GIB = 1 << 30
MIB = 1 << 20
COPY_KINDS = ("d2h_pinned", "d2h_pageable", "h2d_pinned", "h2d_pageable", "d2d")
_BANDWIDTH = {kind: f"{kind}_bytes_per_s" for kind in COPY_KINDS}


def _calibrated(value: float, source: str) -> float:
    return field(default=value, metadata={"source": source})  # type: ignore[return-value]


@dataclass(frozen=True)
class LatencyModel:
    """Simulated costs: a copy is a fixed latency plus bytes over its path's bandwidth.

    The defaults are calibrated on an H200 (PyTorch 2.11, CUDA 13); each field's ``source``
    metadata names the measurement it comes from (:func:`calibration_sources`).
    """

    copy_latency_s: float = _calibrated(
        30e-6, "gpu-physics §2a row 'none': readback after 0.50 ms of work blocks 0.51-0.53 ms"
    )
    d2h_pinned_bytes_per_s: float = _calibrated(
        GIB / 19.5e-3, "gpu-physics §2a: a 1 GiB pinned device-to-host copy alone takes 19.5 ms"
    )
    h2d_pinned_bytes_per_s: float = _calibrated(
        GIB / 19.9e-3, "gpu-physics §2a: a 1 GiB pinned host-to-device copy alone takes 19.9 ms"
    )
    d2h_pageable_bytes_per_s: float = _calibrated(
        4 * MIB / 0.55e-3, "gpu-physics §2b row 'no readback': a 4 MiB pageable D2H copy_ takes 0.58 ms"
    )
    h2d_pageable_bytes_per_s: float = _calibrated(
        4 * MIB / 0.77e-3, "gpu-physics §2b row 'no readback': a 4 MiB pageable H2D copy + sync takes 0.80 ms"
    )
    d2d_bytes_per_s: float = _calibrated(
        GIB / 0.95e-3,
        "gpu-physics §2a row 'd2d': every readback and the device synchronize returned after "
        "≈1.0 ms, so the 1 GiB copy ends there (the '1.9 ms alone' includes more than the copy)",
    )
    kernel_s: float = _calibrated(
        0.0, "per device op; 0 keeps the simulator cheap when timing is not the point"
    )

    def copy_seconds(self, nbytes: int, kind: str = "d2h_pinned") -> float:
        """Duration of a ``kind`` copy (one of :data:`COPY_KINDS`) of ``nbytes``."""
        return self.copy_latency_s + nbytes / getattr(self, _BANDWIDTH[kind])


def calibration_sources(model: LatencyModel | None = None) -> dict[str, tuple[float, str]]:
    """Each calibration constant with its value and the measurement it comes from."""
    model = model or LatencyModel()
    return {f.name: (getattr(model, f.name), f.metadata["source"]) for f in fields(model)}


@dataclass
class _Op:
    seq: int
    end: float
    action: Action | None
    waits_for: tuple[tuple[SimStream, int], ...] = ()


@dataclass
class Marker:
    """A point in a stream's queue: everything up to ``seq``, complete at simulated time ``end``."""

    stream: SimStream
    seq: int
    end: float


@dataclass(eq=False)
class HostThread:
    """One host thread's simulated time and current stream."""

    name: str
    time: float = 0.0
    stream: SimStream | None = None


@dataclass(frozen=True)
class Hold:
    """A blocking device-to-host memcpy into pageable memory: other threads' copies wait for it."""

    thread: HostThread
    start: float
    end: float
    label: str


class CopyEngine:
    """One DMA engine: one copy at a time, each in the first free slot from when it is ready."""

    def __init__(self) -> None:
        self._busy: list[tuple[float, float]] = []  # sorted, non-overlapping (start, end)

    def reserve(self, ready: float, seconds: float, horizon: Callable[[], float]) -> float:
        """Book ``seconds`` at or after ``ready``; forget slots that ended before ``horizon()``."""
        busy = self._busy
        if len(busy) > 32:
            now = horizon()
            keep = bisect.bisect_left(busy, (now, now))
            del busy[: max(0, keep - 1)]
        start = ready
        index = bisect.bisect_left(busy, (ready, ready))
        if index and busy[index - 1][1] > start:
            start = busy[index - 1][1]
        while index < len(busy) and busy[index][0] < start + seconds:
            start = max(start, busy[index][1])
            index += 1
        busy.insert(index, (start, start + seconds))
        return start


class Clock:
    """The device's shared state: streams, copy engines, host threads and their holds."""

    def __init__(self, latency: LatencyModel, device: object) -> None:
        self.latency = latency
        self.device = device
        self.streams: list[SimStream] = []
        self.blocking_streams: list[SimStream] = []
        self.engines = {"d2h": CopyEngine(), "h2d": CopyEngine()}
        self.holds: list[Hold] = []
        self.threads: list[HostThread] = []
        self._lock = threading.RLock()
        self._ids = itertools.count()
        self._local = threading.local()
        self.default_stream = SimStream(clock=self, _default=True)

    # --- host threads ------------------------------------------------------------------------
    def thread(self) -> HostThread:
        """The calling thread's host state; a new thread starts at the latest time any reached."""
        current = getattr(self._local, "thread", None)
        if current is None:
            current = self._new_thread(threading.current_thread().name, self.now())
        return current

    def _new_thread(self, name: str, start: float) -> HostThread:
        with self._lock:
            current = self._local.thread = HostThread(name, start)
            self.threads.append(current)
            return current

    def now(self) -> float:
        return max((t.time for t in self.threads), default=0.0)

    @contextmanager
    def host_thread(self, name: str, start_s: float) -> Iterator[HostThread]:
        """Act as another host thread, starting at ``start_s``, on this OS thread (deterministic)."""
        previous = getattr(self._local, "thread", None)
        current = self._new_thread(name, start_s)
        try:
            yield current
        finally:
            self._local.thread = previous

    @property
    def host_time(self) -> float:
        return self.thread().time

    def horizon(self) -> float:
        return min((t.time for t in self.threads), default=0.0)

    # --- current stream --------------------------------------------------------------------
    def current_stream(self) -> SimStream:
        return self.thread().stream or self.default_stream

    def set_current_stream(self, stream: SimStream | None) -> None:
        self.thread().stream = stream

    # --- work ------------------------------------------------------------------------------
    def enqueue(
        self, stream: SimStream, seconds: float, action: Action | None = None, engine: str = ""
    ) -> Marker:
        """Queue work on ``stream`` (through copy engine ``engine`` for a copy)."""
        with self._lock:
            ready = max(self.thread().time, stream.ready_at)
            waits: tuple[tuple[SimStream, int], ...] = ()
            others = self.blocking_streams if stream._default else (
                [self.default_stream] if stream.blocking else []
            )
            for other in others:
                ready = max(ready, other.ready_at)
                if other.queue:
                    waits += ((other, other.last_seq),)
            start = self.engines[engine].reserve(ready, seconds, self.horizon) if engine else ready
            op = _Op(seq=next(self._ids), end=start + seconds, action=action, waits_for=waits)
            stream.queue.append(op)
            stream.ready_at = op.end
            stream.last_seq = op.seq
            return Marker(stream, op.seq, op.end)

    def marker(self, stream: SimStream) -> Marker:
        with self._lock:
            return Marker(stream, stream.last_seq, stream.ready_at)

    def make_wait(self, waiter: SimStream, target: Marker) -> None:
        """``waiter`` runs nothing more until ``target`` is complete (wait_stream / wait_event)."""
        with self._lock:
            waiter.ready_at = max(waiter.ready_at, target.end)
            op = _Op(seq=next(self._ids), end=waiter.ready_at, action=None,
                     waits_for=((target.stream, target.seq),))
            waiter.queue.append(op)
            waiter.last_seq = op.seq

    # --- host waits ------------------------------------------------------------------------
    def wait_for(self, target: Marker) -> float:
        """Block the host until ``target``; run the actions up to it; return blocked seconds."""
        with self._lock:
            self._drain(target.stream, target.seq)
            return self._advance_host(target.end)

    def wait_stream(self, stream: SimStream) -> float:
        return self.wait_for(self.marker(stream))

    def wait_all(self) -> float:
        with self._lock:
            current = self.thread()
            end = max((s.ready_at for s in self.streams), default=current.time)
            for stream in list(self.streams):
                self._drain(stream, stream.last_seq)
            return self._advance_host(end)

    def held(self) -> tuple[float, Hold | None]:
        """A copy call on this thread waits for other threads' pageable memcpys in progress."""
        if not self.holds:
            return 0.0, None
        with self._lock:
            current = self.thread()
            horizon = self.horizon()
            self.holds = [h for h in self.holds if h.end > horizon]
            for hold in self.holds:
                if hold.thread is not current and hold.start <= current.time < hold.end:
                    waited = hold.end - current.time
                    current.time = hold.end
                    return waited, hold
            return 0.0, None

    def hold(self, start: float, label: str) -> None:
        """The calling thread was inside a pageable memcpy from ``start`` until now."""
        with self._lock:
            current = self.thread()
            if current.time > start:
                self.holds.append(Hold(current, start, current.time, label))

    def pending(self, stream: SimStream) -> bool:
        return bool(stream.queue)

    def _advance_host(self, until: float) -> float:
        current = self.thread()
        blocked = max(0.0, until - current.time)
        current.time = max(current.time, until)
        return blocked

    def _drain(self, stream: SimStream, upto: int) -> None:
        while stream.queue and stream.queue[0].seq <= upto:
            op = stream.queue.popleft()
            for other, seq in op.waits_for:
                self._drain(other, seq)
            if op.action is not None:
                op.action()


@dataclass(eq=False)
class SimStream:
    """A FIFO of simulated device work. Compared by identity, like a real stream handle.

    ``blocking``: created with default flags (``cudaStreamCreate``), so it and the legacy default
    stream order each other; ``torch.cuda.Stream()`` makes non-blocking streams.
    """

    clock: Clock
    priority: int = 0
    _default: bool = False
    blocking: bool = False
    queue: deque[_Op] = field(default_factory=deque)
    ready_at: float = 0.0
    last_seq: int = -1

    def __post_init__(self) -> None:
        self.clock.streams.append(self)
        if self.blocking:
            self.clock.blocking_streams.append(self)

    @property
    def device(self) -> object:
        return self.clock.device

    def __repr__(self) -> str:
        name = "default" if self._default else f"#{self.clock.streams.index(self)}"
        return f"<SimStream {name} pending={len(self.queue)}>"


@dataclass(eq=False)
class SimEvent:
    """An event marker; its ``recorded`` marker is set by ``record``."""

    clock: Clock
    enable_timing: bool = False
    blocking: bool = False
    interprocess: bool = False
    recorded: Marker | None = None

    def record_on(self, stream: SimStream) -> None:
        self.recorded = self.clock.marker(stream)

    def elapsed_ms(self, end: SimEvent) -> float:
        if not (self.enable_timing and end.enable_timing):
            raise SimulatorError("elapsed_time needs both events created with enable_timing=True")
        if self.recorded is None or end.recorded is None:
            raise SimulatorError("elapsed_time needs both events recorded")
        return (end.recorded.end - self.recorded.end) * 1e3

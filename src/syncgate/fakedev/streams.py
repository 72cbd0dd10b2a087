"""Streams and events of the simulated accelerator, and the clock that says how long the host waits.

Work on a stream is a FIFO of operations, each with a simulated duration and an optional action
(the write of an asynchronous device-to-host copy). Actions run only when the host waits for them:
an event, stream or device synchronize, or an implicit blocking operation. Until then a pinned host
buffer keeps its poison, exactly the window in which real code would read garbage.

The clock is simulated. The host's time only moves when it waits; a wait advances it to the
completion time of what it waits for, and the difference is the blocked time the ledger records.
A blocking readback is modelled as a barrier over all streams (CUDA's legacy default stream plus a
synchronous memcpy), which is what stalled the KV-transfer streams in vLLM issue #22754; an event
wait covers only the work recorded before that event on its own stream.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from syncgate.errors import SimulatorError

Action = Callable[[], None]


@dataclass(frozen=True)
class LatencyModel:
    """Simulated costs. Copies cost a fixed latency plus bytes over bandwidth."""

    copy_latency_s: float = 5e-6
    copy_bandwidth_bytes_per_s: float = 20e9
    kernel_s: float = 0.0  # per device op; 0 keeps the simulator cheap when timing is not the point

    def copy_seconds(self, nbytes: int) -> float:
        return self.copy_latency_s + nbytes / self.copy_bandwidth_bytes_per_s


@dataclass
class _Op:
    seq: int
    end: float
    action: Action | None
    waits_for: tuple[SimStream, int] | None = None


@dataclass
class Marker:
    """A point in a stream's queue: everything up to ``seq``, complete at simulated time ``end``."""

    stream: SimStream
    seq: int
    end: float


class Clock:
    """The device's shared state: host time, streams, the current stream of each thread."""

    def __init__(self, latency: LatencyModel, device: object) -> None:
        self.latency = latency
        self.device = device
        self.host_time = 0.0
        self.streams: list[SimStream] = []
        self._lock = threading.RLock()
        self._ids = itertools.count()
        self._local = threading.local()
        self.default_stream = SimStream(clock=self, _default=True)

    # --- current stream --------------------------------------------------------------------
    def current_stream(self) -> SimStream:
        return getattr(self._local, "stream", None) or self.default_stream

    def set_current_stream(self, stream: SimStream | None) -> None:
        self._local.stream = stream

    # --- work ------------------------------------------------------------------------------
    def enqueue(self, stream: SimStream, seconds: float, action: Action | None = None) -> Marker:
        with self._lock:
            start = max(self.host_time, stream.ready_at)
            op = _Op(seq=next(self._ids), end=start + seconds, action=action)
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
                     waits_for=(target.stream, target.seq))
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
            end = max((s.ready_at for s in self.streams), default=self.host_time)
            for stream in list(self.streams):
                self._drain(stream, stream.last_seq)
            return self._advance_host(end)

    def pending(self, stream: SimStream) -> bool:
        return bool(stream.queue)

    def _advance_host(self, until: float) -> float:
        blocked = max(0.0, until - self.host_time)
        self.host_time = max(self.host_time, until)
        return blocked

    def _drain(self, stream: SimStream, upto: int) -> None:
        while stream.queue and stream.queue[0].seq <= upto:
            op = stream.queue.popleft()
            if op.waits_for is not None:
                other, seq = op.waits_for
                self._drain(other, seq)
            if op.action is not None:
                op.action()

    def advance_host(self, seconds: float) -> None:
        """Host-side work (Python between launches) takes time too."""
        with self._lock:
            self.host_time += seconds


@dataclass(eq=False)
class SimStream:
    """A FIFO of simulated device work. Compared by identity, like a real stream handle."""

    clock: Clock
    priority: int = 0
    _default: bool = False
    queue: deque[_Op] = field(default_factory=deque)
    ready_at: float = 0.0
    last_seq: int = -1

    def __post_init__(self) -> None:
        self.clock.streams.append(self)

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

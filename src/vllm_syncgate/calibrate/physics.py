"""vLLM issue #22754 on the simulated accelerator: the two tables of the H200 measurement.

Same parameters as the measurement (``h200.toml`` ``[physics_22754]``): 20 ms of side-stream work
or a 1 GiB copy, 0.5 ms on the current stream, then one readback (§2a); a 20 ms forward pass and
a readback on the model thread while a KV thread starts a 4 MiB copy 4 ms later (§2b).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from vllm_syncgate.calibrate.scenarios import Setup, make_setup, to_list_pattern
from vllm_syncgate.fakedev import LatencyModel, SimulatedAccelerator, simulated_accelerator
from vllm_syncgate.fakedev.streams import GIB, MIB

SIDE_WORK_S = 0.020
MAIN_WORK_S = 0.0005
FORWARD_S = 0.020
KV_START_S = 0.004
KV_BYTES = 4 * MIB
BATCH = 64

SIDES: dict[str, Callable[[SimulatedAccelerator], Any]] = {
    "none": lambda acc: None,
    "kernel_nonblocking_stream": lambda acc: acc.enqueue_work(SIDE_WORK_S, torch.cuda.Stream()),
    "kernel_blocking_stream": lambda acc: acc.enqueue_work(SIDE_WORK_S, acc.blocking_stream()),
    "h2d_copy_nonblocking_stream": lambda acc: acc.enqueue_copy("h2d_pinned", GIB, torch.cuda.Stream()),
    "d2h_copy_nonblocking_stream": lambda acc: acc.enqueue_copy("d2h_pinned", GIB, torch.cuda.Stream()),
    "d2d_copy_nonblocking_stream": lambda acc: acc.enqueue_copy("d2d", GIB, torch.cuda.Stream()),
}
READBACKS: dict[str, Callable[[Setup, torch.Tensor], Any]] = {
    "tolist": lambda s, ids: ids.tolist(),
    "item": lambda s, ids: ids[0].item(),
    "event_to_list": lambda s, ids: to_list_pattern(s, ids),
    "device_synchronize": lambda s, ids: torch.cuda.synchronize(),
}
MODEL_READBACKS = ("no_readback", "tolist", "event_to_list", "device_synchronize")


def _kv_pageable_d2h(kv: dict[str, torch.Tensor]) -> None:
    kv["pageable"].copy_(kv["device"])


def _kv_pinned_d2h(kv: dict[str, torch.Tensor]) -> None:
    kv["pinned"].copy_(kv["device"], non_blocking=True)
    torch.cuda.current_stream().synchronize()


def _kv_pageable_h2d(kv: dict[str, torch.Tensor]) -> None:
    kv["device"].copy_(kv["pageable"])
    torch.cuda.current_stream().synchronize()


KV_OPS: dict[str, Callable[[dict[str, torch.Tensor]], None]] = {
    "pageable_d2h": _kv_pageable_d2h,
    "pinned_d2h+stream_sync": _kv_pinned_d2h,
    "pageable_h2d+stream_sync": _kv_pageable_h2d,
}


def tolerance_ms(measured_ms: float) -> float:
    """The agreement target: within max(1 ms, 15 %) of the measurement."""
    return max(1.0, 0.15 * measured_ms)


def _setup(acc: SimulatedAccelerator) -> tuple[Setup, torch.Tensor]:
    setup = make_setup(torch.cuda, acc.device, acc.device_tensor)
    setup.pinned = torch.empty(BATCH, dtype=torch.int64, pin_memory=True)
    return setup, acc.device_tensor(torch.arange(BATCH, dtype=torch.int64))


def calling_thread_blocked_ms(latency: LatencyModel | None = None) -> dict[str, float]:
    """§2a: host-blocked ms of the reading thread, keyed ``"<side>/<readback>"``."""
    table = {}
    for side, queue_side in SIDES.items():
        for readback, read in READBACKS.items():
            with simulated_accelerator("cuda", latency=latency) as acc:
                setup, ids = _setup(acc)
                queue_side(acc)
                acc.enqueue_work(MAIN_WORK_S)
                start = acc.host_time
                read(setup, ids)
                table[f"{side}/{readback}"] = (acc.host_time - start) * 1e3
    return table


def other_thread_copy_ms(latency: LatencyModel | None = None) -> dict[str, float]:
    """§2b: latency in ms of the KV thread's copy, keyed ``"<model readback>/<kv op>"``."""
    table = {}
    for readback in MODEL_READBACKS:
        for kv_op, run_kv in KV_OPS.items():
            with simulated_accelerator("cuda", latency=latency) as acc:
                setup, ids = _setup(acc)
                kv = {
                    "device": acc.device_tensor(torch.zeros(KV_BYTES // 4, dtype=torch.int32)),
                    "pinned": torch.empty(KV_BYTES // 4, dtype=torch.int32, pin_memory=True),
                    "pageable": torch.zeros(KV_BYTES // 4, dtype=torch.int32),
                }
                start = acc.host_time
                acc.enqueue_work(FORWARD_S)
                if readback != "no_readback":
                    READBACKS[readback](setup, ids)
                with acc.host_thread("kv", start + KV_START_S), torch.cuda.stream(torch.cuda.Stream()):
                    begin = acc.host_time
                    run_kv(kv)
                    table[f"{readback}/{kv_op}"] = (acc.host_time - begin) * 1e3
    return table

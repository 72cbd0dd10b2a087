"""Simulated-accelerator benchmarks (Foundation issue).

1. Overhead: 1,000 decode steps of vLLM's real ``GPUModelRunner._to_list`` on the simulated
   device vs the same method on plain CPU tensors (with no-op events, as vLLM's CPU runner has),
   alternating the two in rounds so machine noise hits both; ratio of medians.
2. vLLM issue #22754 reproduced with the latency model: a long KV-cache transfer queued on a second
   stream, then one decode step that reads the sampled ids with ``.tolist()`` on the device tensor
   vs one that uses ``_to_list``'s event wait. Host-blocked time of each and the ratio.

Run: .venv/bin/python benchmarks/bench_fakedev.py   (writes benchmarks/results/fakedev.json)
"""

from __future__ import annotations

import statistics
import time
from types import SimpleNamespace

import torch
from vllm.v1.worker.gpu_model_runner import GPUModelRunner

from _table import emit
from syncgate.audit import StepKind
from syncgate.fakedev import LatencyModel, simulated_accelerator
from syncgate.probes.to_list import to_list_state

STEPS = 1000
ROUNDS = 5
BATCH = 64


class _NoopEvent:
    def record(self) -> None:
        pass

    def synchronize(self) -> None:
        pass


def _plain_round() -> float:
    runner = SimpleNamespace(
        transfer_event=_NoopEvent(), sampled_token_ids_pinned_cpu=torch.zeros((BATCH, 1), dtype=torch.int64)
    )
    ids = torch.arange(BATCH).reshape(BATCH, 1)
    start = time.perf_counter()
    for _ in range(STEPS):
        GPUModelRunner._to_list(runner, ids)
    return time.perf_counter() - start


def _simulated_round() -> float:
    with simulated_accelerator("cuda") as acc:
        runner = to_list_state(acc, BATCH)
        ids = acc.device_tensor(torch.arange(BATCH).reshape(BATCH, 1))
        start = time.perf_counter()
        for _ in range(STEPS):
            with acc.ledger.step(StepKind.DECODE):
                GPUModelRunner._to_list(runner, ids)
        elapsed = time.perf_counter() - start
        assert acc.ledger.counts() == {"event_sync": STEPS}
    return elapsed


def overhead() -> dict:
    plain, simulated = [], []
    for _ in range(ROUNDS):
        plain.append(_plain_round())
        simulated.append(_simulated_round())
    p, s = statistics.median(plain), statistics.median(simulated)
    return {
        "plain_us_per_step": p / STEPS * 1e6,
        "simulated_us_per_step": s / STEPS * 1e6,
        "overhead_ratio": s / p,
    }


def stall_22754(kv_transfer_s: float = 0.020, sampler_s: float = 0.0005) -> dict:
    """Host-blocked seconds for one decode step while a KV transfer runs on another stream."""
    blocked = {}
    for variant in ("tolist_on_device", "event_sync_to_list"):
        with simulated_accelerator("cuda", latency=LatencyModel()) as acc:
            kv_stream = torch.cuda.Stream()
            runner = to_list_state(acc, BATCH)
            ids = acc.device_tensor(torch.arange(BATCH).reshape(BATCH, 1))
            acc.enqueue_work(kv_transfer_s, kv_stream)  # disaggregated prefill: KV blocks in flight
            with acc.ledger.step(StepKind.DECODE):
                acc.enqueue_work(sampler_s)  # forward + sampler on the main stream
                if variant == "tolist_on_device":
                    ids.tolist()
                else:
                    GPUModelRunner._to_list(runner, ids)
            blocked[variant] = acc.ledger.blocked_seconds()
    return {
        "kv_transfer_ms": kv_transfer_s * 1e3,
        "sampler_ms": sampler_s * 1e3,
        "blocked_ms_tolist": blocked["tolist_on_device"] * 1e3,
        "blocked_ms_event": blocked["event_sync_to_list"] * 1e3,
        "stall_ratio": blocked["tolist_on_device"] / blocked["event_sync_to_list"],
    }


def main() -> None:
    over = overhead()
    stall = stall_22754()
    rows = [
        {"measure": "_to_list, plain CPU tensors", "value": over["plain_us_per_step"], "unit": "us/step"},
        {"measure": "_to_list, simulated device", "value": over["simulated_us_per_step"], "unit": "us/step"},
        {"measure": "simulator overhead", "value": over["overhead_ratio"], "unit": "x"},
        {"measure": "#22754 host blocked, .tolist()", "value": stall["blocked_ms_tolist"], "unit": "ms"},
        {"measure": "#22754 host blocked, event wait", "value": stall["blocked_ms_event"], "unit": "ms"},
        {"measure": "#22754 stall ratio", "value": stall["stall_ratio"], "unit": "x"},
    ]
    emit("fakedev", rows, {"steps": STEPS, "rounds": ROUNDS, "batch": BATCH, **over, **stall})


if __name__ == "__main__":
    main()

"""Per-step host cost of the ``seq_lens_cpu`` update: the runner's two loops vs the vectorized one.

Side by side in one run, alternating in every round so machine noise hits both, at 8, 64, 256 and
1024 requests in a steady decode step (every request cached, request->slot mapping shuffled, no
speculation):

- ``loop``: the runner's own ``_update_seq_lens_cpu`` (default: the after-fix fixture tree; any
  vllm-ascend tree at or after #13382 with ``--source``), loaded by the harness and bound to a
  fake self holding the same torch/NumPy buffers as upstream;
- ``vectorized``: ``vllm_syncgate.npu.update_seq_lens_cpu`` on the same buffers, including the cost of
  turning the cached request ids into slots (``idx_mapping_np`` and the scheduled-token counts
  already exist in ``prepare_inputs``, so they are built outside the timing).

The state is built on the simulated NPU, then timed after it is closed: the no-speculation path
touches no device object, and the simulator's torch-function mode would slow the loop unfairly.
Both results are checked equal before timing. Target (issue 5): >= 5x at 256 requests.

Run: .venv/bin/python benchmarks/bench_seq_lens.py [--rounds N] [--source TREE]
(writes benchmarks/results/seq_lens.json)
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import numpy as np

from _table import emit
from vllm_syncgate.fakedev import simulated_accelerator
from vllm_syncgate.npu import update_seq_lens_cpu
from vllm_syncgate.npu.harness import AscendSource, bind, load_runner_class
from vllm_syncgate.npu.parent import SimulatedGPUModelRunner
from vllm_syncgate.npu.state import CachedRequests, RunnerSpec, SchedulerStep, runner_state

SIZES = (8, 64, 256, 1024)
AFTER_FIX = Path(__file__).resolve().parents[1] / "tests" / "data" / "npu" / "after_fix"
TARGET_AT_256 = 5.0


def build(runner_cls: type, n: int, seed: int):
    """A fake runner mid-decode with ``n`` requests in shuffled slots, and the step's inputs."""
    rng = random.Random(seed)
    with simulated_accelerator("npu"):
        runner = bind(runner_cls, runner_state(RunnerSpec(max_num_reqs=2 * n)))
    states = runner.req_states
    slots = rng.sample(range(2 * n), n)
    req_ids = [f"req-{i}" for i in range(n)]
    for req_id, slot in zip(req_ids, slots, strict=True):
        states.req_id_to_index[req_id] = slot
        states.num_computed_tokens_np[slot] = rng.randrange(1, 4096)
    step = SchedulerStep(
        scheduled_cached_reqs=CachedRequests(list(req_ids), [0] * n),
        num_scheduled_tokens=dict.fromkeys(req_ids, 1),
    )
    idx_mapping = np.array(slots, dtype=np.int32)
    num_scheduled = np.ones(n, dtype=np.int32)
    return runner, step, req_ids, idx_mapping, num_scheduled


def vectorized(runner, step, idx_mapping, num_scheduled) -> None:
    states = runner.req_states
    cached = step.scheduled_cached_reqs.req_ids
    refreshed = np.fromiter(
        (states.req_id_to_index[r] for r in cached), dtype=np.int64, count=len(cached)
    )
    update_seq_lens_cpu(
        runner.input_buffers.seq_lens_np,
        states.num_computed_tokens_cpu.numpy(),
        idx_mapping,
        num_scheduled,
        refreshed_slots=refreshed,
        source=states.num_computed_tokens_np,
    )


def per_call(number: int, fn, *args) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - start) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--source", default=str(AFTER_FIX), help="vllm-ascend tree (after #13382)")
    args = parser.parse_args()
    source = AscendSource.at(args.source)
    runner_cls = load_runner_class(source, SimulatedGPUModelRunner, ["_update_seq_lens_cpu"])
    rows = []
    for n in SIZES:
        loop_runner, step, req_ids, idx_mapping, num_scheduled = build(runner_cls, n, seed=n)
        vec_runner, *_ = build(runner_cls, n, seed=n)
        loop_runner._update_seq_lens_cpu(step, req_ids)
        vectorized(vec_runner, step, idx_mapping, num_scheduled)
        assert np.array_equal(loop_runner.input_buffers.seq_lens_np,
                              vec_runner.input_buffers.seq_lens_np), n
        assert np.array_equal(loop_runner.req_states.num_computed_tokens_cpu.numpy(),
                              vec_runner.req_states.num_computed_tokens_cpu.numpy()), n
        number = max(5, 20_000 // n)
        loop_s, vec_s = [], []
        for _ in range(args.rounds):
            loop_s.append(per_call(number, loop_runner._update_seq_lens_cpu, step, req_ids))
            vec_s.append(
                per_call(number, vectorized, vec_runner, step, idx_mapping, num_scheduled)
            )
        loop_us, vec_us = statistics.median(loop_s) * 1e6, statistics.median(vec_s) * 1e6
        rows.append({
            "requests": n,
            "loop_us": round(loop_us, 2),
            "vectorized_us": round(vec_us, 2),
            "speedup": round(loop_us / vec_us, 1),
        })
    at_256 = next(r["speedup"] for r in rows if r["requests"] == 256)
    emit("seq_lens", rows, {
        "loop_source": f"{source.root} (version {source.version})",
        "rounds": args.rounds,
        "speedup_at_256": at_256,
        "target_at_256": TARGET_AT_256,
        "meets_target": at_256 >= TARGET_AT_256,
    })


if __name__ == "__main__":
    main()

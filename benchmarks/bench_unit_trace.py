"""What tracing costs the unit level's probes (``check --source`` traces them, unit/ran.py).

The shipped probes run on the installed vLLM in one process, untraced and traced in alternation
(after one warm-up run of each), and the CPU and wall seconds of each run are compared side by
side: median of each and the traced/untraced ratio. vLLM's import is paid before, once.

Run: .venv/bin/python benchmarks/bench_unit_trace.py [RUNS]   (writes results/unit_trace.json)
"""

from __future__ import annotations

import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from _table import emit


def main(runs: int) -> None:
    import vllm

    from vllm_syncgate.unit.ran import FunctionsRun
    from vllm_syncgate.unit.vllm_probes import installed_targets, probe_vllm

    targets = installed_targets()
    root = Path(vllm.__file__).parent
    times: dict[str, list[tuple[float, float]]] = {"untraced": [], "traced": []}
    functions = 0
    for i in range(runs + 1):
        for mode in ("untraced", "traced"):
            tracer = FunctionsRun(root) if mode == "traced" else None
            cpu, wall = time.process_time(), time.perf_counter()
            with tracer or nullcontext():
                assert probe_vllm("cuda", targets).passed
            if i:  # the first round warms both up
                times[mode].append((time.process_time() - cpu, time.perf_counter() - wall))
            if tracer is not None:
                functions = len(tracer.functions())
    rows = [{"mode": mode, "runs": len(got), "cpu_s_median": statistics.median(c for c, _ in got),
             "wall_s_median": statistics.median(w for _, w in got)} for mode, got in times.items()]
    untraced, traced = rows
    emit("unit_trace", rows, {
        "cpu_ratio": traced["cpu_s_median"] / untraced["cpu_s_median"],
        "wall_ratio": traced["wall_s_median"] / untraced["wall_s_median"],
        "extra_cpu_s": traced["cpu_s_median"] - untraced["cpu_s_median"],
        "vllm_functions_run": functions,
    })


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)

"""Live-audit overhead: the same 200-request load with the plugin armed and not (target >= 0.98).

Two servers with identical flags boot side by side, one with SYNCGATE_AUDIT_DIR set. The load is
split into blocks of 25 requests (8 in flight, 32 greedy tokens each) sent in ABBA order, so
drift and noise hit both sides alike; only one server is busy at a time. Throughput is generated
tokens per second of block wall time. The peak RSS of each server's whole process tree (psutil,
sampled every 0.2 s) is reported too (target <= 4 GiB).

Run: .venv/bin/python benchmarks/bench_audit_overhead.py [--requests 200]
     (writes benchmarks/results/audit_overhead.json)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _table import emit
from vllm_syncgate.audit.journal import ENV_AUDIT_DIR, journal_paths
from vllm_syncgate.models import ensure_model, load_recipe
from vllm_syncgate.profiles import builtin_profile_path, load_profile
from vllm_syncgate.serve.client import OpenAIClient
from vllm_syncgate.serve.process import tree_rss
from vllm_syncgate.serve.scenarios import load_prompts
from vllm_syncgate.serve.vllm import SERVED_MODEL_NAME, vllm_server

BLOCK, IN_FLIGHT, TOKENS = 25, 8, 32
RSS_TARGET = 4 * 2**30
RATIO_TARGET = 0.98


class PeakRss:
    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            time.sleep(0.2)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def block(client: OpenAIClient, prompts: list[str]) -> tuple[float, int]:
    started = time.monotonic()
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        done = list(pool.map(lambda p: client.complete(p, TOKENS), prompts))
    return time.monotonic() - started, sum(len(c.token_ids) for c in done)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    profile = load_profile(builtin_profile_path("cpu"))
    group = profile.groups[0]
    model, _ = ensure_model(load_recipe(profile.model))
    work = Path(tempfile.mkdtemp(prefix="syncgate-bench-audit-"))
    base_env = {**os.environ, **profile.group_env(group)}
    base_env.pop(ENV_AUDIT_DIR, None)
    sides = {
        "armed": {**base_env, ENV_AUDIT_DIR: str(work / "audit")},
        "plain": base_env,
    }
    (work / "audit").mkdir()
    servers = {name: vllm_server(model.path, profile.group_flags(group), env=env,
                                 log_path=work / f"{name}.log", name=name,
                                 startup_timeout_s=profile.startup_timeout_s)
               for name, env in sides.items()}
    short, _ = load_prompts()
    prompts = [short[i % len(short)] for i in range(BLOCK)]
    blocks = args.requests // BLOCK
    order = [("armed", "plain") if i % 2 == 0 else ("plain", "armed") for i in range(blocks)]
    rows = []
    try:
        for server in servers.values():
            server.launch()
        for server in servers.values():
            server.wait_healthy()
        rss = {name: PeakRss(server.pid) for name, server in servers.items()}
        clients = {name: OpenAIClient(s.base_url, SERVED_MODEL_NAME) for name, s in servers.items()}
        for name in servers:  # warm-up outside the measurement
            block(clients[name], prompts[:IN_FLIGHT])
        for i, pair in enumerate(order):
            for name in pair:
                seconds, tokens = block(clients[name], prompts)
                rows.append({"block": i, "side": name, "requests": BLOCK, "seconds": round(seconds, 3),
                             "tokens_per_s": round(tokens / seconds, 1)})
        peaks = {name: sampler.stop() for name, sampler in rss.items()}
    finally:
        for server in servers.values():
            server.stop()
    tps = {}
    for name in servers:
        mine = [r for r in rows if r["side"] == name]
        tps[name] = len(mine) * BLOCK * TOKENS / sum(r["seconds"] for r in mine)
    ratio = tps["armed"] / tps["plain"]
    per_block = [a["tokens_per_s"] / p["tokens_per_s"] for a, p in zip(
        [r for r in rows if r["side"] == "armed"], [r for r in rows if r["side"] == "plain"],
        strict=True)]
    summary = {
        "requests_per_side": blocks * BLOCK,
        "tokens_per_s_armed": round(tps["armed"], 1),
        "tokens_per_s_plain": round(tps["plain"], 1),
        "throughput_ratio": round(ratio, 4),
        "median_block_ratio": round(statistics.median(per_block), 4),
        "ratio_target": RATIO_TARGET,
        "ratio_within_target": ratio >= RATIO_TARGET,
        "peak_tree_rss_gib_armed": round(peaks["armed"] / 2**30, 3),
        "peak_tree_rss_gib_plain": round(peaks["plain"] / 2**30, 3),
        "rss_within_target": max(peaks.values()) <= RSS_TARGET,
        "journals": [p.name for p in journal_paths(work / "audit")],
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
    emit("audit_overhead", rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

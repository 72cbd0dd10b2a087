"""Live-audit memory over a long server run: RSS after 100k journaled steps, before and after.

A worker's LiveAudit hands every finished step to its journal. Before audit.journal existed the
ledger also kept each Step (its events cleared, its meta and lists not), so a server that ran for
days grew by one Step per runner step. Both sides run here, side by side, each in a fresh
interpreter: "before" imports syncgate from ``git archive <rev>`` (the tree before the change),
"after" from this checkout's src/. Each drives the same decode steps (two waits each, the meta a
real step carries) through ``LiveAudit.ledger`` into a real journal in a temp dir, and reports RSS
after a warm-up and after all steps (gc run at both points), the peak, and the steps the ledger
still holds.

Run: .venv/bin/python benchmarks/bench_journal_memory.py [--steps 100000] [--before REV]
     (writes benchmarks/results/journal_memory.json)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _revision import before_tree
from _table import emit

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "9d3ec16a6885c991ed6b9f9c8ae11b3f7b2ef35d"  # the last commit before audit.journal
WARMUP = 1000
GROWTH_TARGET_MIB = 4.0  # after: 100k steps may not add more than allocator noise

CHILD = r"""
import gc, json, sys, tempfile, time
from pathlib import Path
import vllm_syncgate
from vllm_syncgate.audit.backends.session import LiveAudit
from vllm_syncgate.audit.events import CallSite, StepKind, SyncKind

steps, warmup = int(sys.argv[1]), int(sys.argv[2])
to_list = CallSite("gpu_model_runner.py", 2210, "_to_list", "vllm.v1.worker.gpu_model_runner",
                   "GPUModelRunner._to_list")
forward = CallSite("gpu_model_runner.py", 1780, "execute_model",
                   "vllm.v1.worker.gpu_model_runner", "GPUModelRunner.execute_model")

def rss(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"/proc/self/status has no {field}")

def run(audit, first, count):
    ledger = audit.ledger
    for i in range(first, first + count):
        ledger.begin_step(StepKind.DECODE, num_reqs=16, num_scheduled_tokens=16, spec_tokens=0)
        ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=to_list, blocked_s=1e-4)
        ledger.record(SyncKind.BLOCKING_READBACK, "Tensor.tolist", site=to_list)
        ledger.end_step(dur_ms=12.5)
        if i % 64 == 0:  # an output-thread wait between steps
            ledger.record(SyncKind.STREAM_SYNC, "Stream.synchronize", site=forward)

with tempfile.TemporaryDirectory() as tmp:
    audit = LiveAudit(Path(tmp), "cpu")
    run(audit, 0, warmup)
    gc.collect()
    start = rss("VmRSS")
    began = time.perf_counter()
    run(audit, warmup, steps)
    elapsed = time.perf_counter() - began
    gc.collect()
    end = rss("VmRSS")
    kept = len(audit.ledger.steps)
    audit.stop()
    journal = sum(p.stat().st_size for p in Path(tmp).iterdir())
print(json.dumps({"syncgate": vllm_syncgate.__file__, "rss_start": start, "rss_end": end,
                  "rss_peak": rss("VmHWM"), "steps_kept": kept, "journal_bytes": journal,
                  "elapsed_s": elapsed}))
"""


def measure(src: Path, steps: int) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCGATE_")}
    env["PYTHONPATH"] = str(src)
    done = subprocess.run([sys.executable, "-c", CHILD, str(steps), str(WARMUP)], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{src}: measuring child failed: {done.stderr.strip().splitlines()[-1]}")
    result = json.loads(done.stdout.splitlines()[-1])
    if not str(result["syncgate"]).startswith(str(src)):
        raise SystemExit(f"{src}: the child imported syncgate from {result['syncgate']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--before", default=BEFORE, help="git revision of the 'before' side")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"before": (args.before[:12], before_tree(args.before, Path(tmp))),
                 "after": ("worktree", ROOT / "src")}
        for side, (revision, src) in sides.items():
            r = measure(src, args.steps)
            growth = int(r["rss_end"]) - int(r["rss_start"])
            rows.append({
                "side": side,
                "revision": revision,
                "steps": args.steps,
                "steps_kept": r["steps_kept"],
                "rss_start_mib": round(int(r["rss_start"]) / 2**20, 1),
                "rss_end_mib": round(int(r["rss_end"]) / 2**20, 1),
                "growth_mib": round(growth / 2**20, 2),
                "growth_bytes_per_step": round(growth / args.steps, 1),
                "peak_mib": round(int(r["rss_peak"]) / 2**20, 1),
                "us_per_step": round(float(r["elapsed_s"]) / args.steps * 1e6, 1),
                "journal_mib": round(int(r["journal_bytes"]) / 2**20, 1),
            })
    after = rows[-1]
    emit("journal_memory", rows, {
        "growth_target_mib": GROWTH_TARGET_MIB,
        "after_within_target": after["growth_mib"] <= GROWTH_TARGET_MIB,
        "growth_saved_mib": round(rows[0]["growth_mib"] - after["growth_mib"], 2),
    })


if __name__ == "__main__":
    main()

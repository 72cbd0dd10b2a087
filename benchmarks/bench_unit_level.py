"""Wall time of the unit level (simulator, probes on real vLLM code, audit core), minus vLLM's import.

The first import of vLLM's runner modules costs 10-20 s on these machines and is paid once per
process whatever the tests do, so it is measured alone in a fresh process and subtracted.

Run: .venv/bin/python benchmarks/bench_unit_level.py   (writes benchmarks/results/unit_level.json)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from _table import emit

ROOT = Path(__file__).resolve().parents[1]
UNIT_LEVEL = [
    "tests/ut/fakedev",
    "tests/ut/probes",
    "tests/ut/audit/test_audit_budgets.py",
    "tests/ut/audit/test_audit_ledger.py",
    "tests/ut/audit/test_audit_verdict.py",
]
IMPORT = "import vllm.v1.worker.gpu_model_runner, vllm.v1.worker.cpu_model_runner"


def _wall(argv: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode


def main() -> None:
    import_s, _ = _wall([sys.executable, "-c", IMPORT])
    pytest_s, rc = _wall([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *UNIT_LEVEL])
    rows = [
        {"phase": "first vLLM import (alone)", "seconds": import_s},
        {"phase": "unit level under pytest", "seconds": pytest_s},
        {"phase": "unit level minus import", "seconds": pytest_s - import_s},
    ]
    emit("unit_level", rows, {"pytest_exit": rc, "target_s": 30, "met": pytest_s - import_s <= 30})


if __name__ == "__main__":
    main()

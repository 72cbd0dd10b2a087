"""The package as it was at an earlier revision, for benchmarks that measure before and after side
by side in one run: ``git archive`` of ``src/vllm_syncgate``, imported through PYTHONPATH."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def before_tree(rev: str, into: Path) -> Path:
    """``src/`` of ``rev``, unpacked under ``into``; the one-line error says what git refused."""
    done = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/vllm_syncgate"],
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git archive {rev}: {done.stderr.decode().strip().splitlines()[-1]}")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"

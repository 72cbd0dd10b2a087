"""Reading and appending to files a user or a CI log names: regular files only, never blocking,
bounded in size and nesting.

A path on the command line or in a profile may be a FIFO (opening it blocks until a writer
comes), a device (``/dev/zero`` never ends) or a huge file; a JSON or TOML document may nest
thousands deep and exhaust the recursion limit. Everything here turns those into ``OSError``
(with a ``strerror`` the callers already print) or ``ValueError`` (the type JSON parsers raise),
so each reader keeps its own one-line error and names its own input.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any

#: The largest data file (profile, budget, config, marker) read whole.
MAX_DATA_BYTES = 16 << 20


class NotRegularFile(OSError):
    """The path is a FIFO, socket or device, not a regular file."""


class TooLarge(OSError):
    """The file is larger than the reader allows."""


def _regular_and_blocking(fd: int, path: str | Path) -> None:
    """Refuse what ``fd`` (opened with O_NONBLOCK) names unless it is a regular file, then let
    its reads and writes block as usual."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if not stat.S_ISREG(mode):
        raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
    os.set_blocking(fd, True)


def replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a private temporary beside ``path``, then rename it over ``path``: a
    reader (another syncgate sharing the cache) sees the old bytes or the new, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def keep_newest(directory: Path, pattern: str, count: int) -> None:
    """Remove all but the ``count`` most recently written files matching ``pattern``: a cache
    that gains an entry per changed tree would otherwise grow for ever."""
    entries = []
    for path in directory.glob(pattern):
        with contextlib.suppress(OSError):
            entries.append((path.stat().st_mtime_ns, path))
    for _, path in sorted(entries, reverse=True)[count:]:
        with contextlib.suppress(OSError):
            path.unlink()


def open_regular(path: str | Path) -> IO[bytes]:
    """Open ``path`` for binary reading if it is a regular file (never blocks on a FIFO)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        _regular_and_blocking(fd, path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def append_regular(path: str | Path, data: bytes) -> None:
    """Append ``data`` to regular file ``path`` (created if missing); a FIFO, socket or device is
    :class:`NotRegularFile` at once instead of a write that blocks or goes nowhere."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path)) from None
        raise
    try:
        _regular_and_blocking(fd, path)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def read_regular(path: str | Path, limit: int = MAX_DATA_BYTES) -> bytes:
    """The bytes of regular file ``path``; :class:`TooLarge` past ``limit`` bytes."""
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(errno.EFBIG, f"larger than {limit} bytes", str(path))
    return data


def json_loads(text: str | bytes) -> Any:
    """``json.loads``, with nesting past the recursion limit a ``JSONDecodeError`` too."""
    try:
        return json.loads(text)
    except RecursionError:
        doc = text if isinstance(text, str) else text[:80].decode("utf-8", "replace")
        raise json.JSONDecodeError("nested too deeply", doc, 0) from None

"""Writing a set of report files all-or-nothing, and making untrusted text safe to print.

A report is several files that describe one run (Markdown, JSON, JUnit, a plot). A reader that
finds ``report.json`` must be able to trust that ``junit.xml`` next to it is from the same run,
so every file is first written under a temporary name in the target directory and the names are
swapped in only once every one was written; any failure removes the temporaries (and a directory
this call created), leaving nothing new behind.

Log lines, node ids and env headers come from CI and may hold terminal escapes (ESC, BEL) or
bytes XML 1.0 cannot carry; :func:`printable` (:func:`vllm_syncgate.escaping.terminal_block`, the
one rule for multi-line text) turns those into visible ``\\xNN`` text.

Temporary files are private (``mkstemp``: 0600) while they are written; each gets the mode a
plain ``open()`` would have given it (0644 under umask 022) before it is swapped in, so an
artifact upload or another user of a shared container can read the report; a file that is
replaced keeps the mode it had, as writing it in place would have.

Reports nobody asked a place for go to :data:`CACHE_DIR` in the working directory, a folder
that ignores itself (a ``.gitignore`` of ``*``, as ``.pytest_cache`` and ``.ruff_cache`` have),
so a run inside a checkout never leaves files that end up in a commit.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from vllm_syncgate.errors import ReportDirError
from vllm_syncgate.escaping import terminal_block as printable  # junit_writer, repro, cli use it

#: A file's content, or a function that writes it to the path it is given.
Content = str | bytes | Callable[[Path], None]

#: The self-ignoring folder, relative to the working directory, that holds default report dirs.
CACHE_DIR = ".syncgate_cache"
_CACHE_FILES = {
    ".gitignore": "# created by syncgate: this folder holds reports and caches, never commit it\n*\n",
    # the Cache Directory Tagging Specification: backup tools skip the folder
    "CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n"
                    "# This file is a cache directory tag created by syncgate.\n",
}

__all__ = ["Content", "current_umask", "follow_umask", "printable", "user_cache_dir", "write_all"]


def user_cache_dir() -> Path:
    """``$SYNCGATE_CACHE_DIR``, else ``~/.cache/syncgate``: the user's own folder for models,
    downloads, overlays and verdict/scan caches. Never inside a scanned tree, whose files
    (a planted cache entry among them) are untrusted."""
    return Path(os.environ.get("SYNCGATE_CACHE_DIR") or "~/.cache/syncgate").expanduser()


def default_report_dir(command: str, base: Path | None = None) -> Path:
    """``CACHE_DIR/command`` under ``base`` (the working directory), the cache folder made first.

    The folder's ``.gitignore`` and ``CACHEDIR.TAG`` are written whenever missing, so a folder
    made by an older syncgate, or one whose ``.gitignore`` was deleted, ignores itself again.
    Raises :class:`ReportDirError` when the folder cannot be made.
    """
    cache = (Path.cwd() if base is None else Path(base)) / CACHE_DIR
    _make_dirs(cache, "the report cache")
    missing = {name: text for name, text in _CACHE_FILES.items() if not (cache / name).exists()}
    if missing:
        write_all(cache, missing, what="the report cache", create=False)
    return cache / command


def write_all(directory: Path, files: Mapping[str, Content], what: str = "the report",
              create: bool = True) -> list[Path]:
    """Write every file of ``files`` into ``directory``, or none; returns the written paths.

    Raises :class:`ReportDirError` (one line: the directory or file, "cannot write ``what``",
    why) on any failure. ``create=False``: the directory must exist already.
    """
    directory = Path(directory)
    created = _make_dirs(directory, what) if create else []
    temps: dict[Path, Path] = {}
    try:
        for name, content in files.items():
            target = directory / name
            if target.is_symlink() or (target.exists() and not target.is_file()):
                raise ReportDirError(f"{target}: cannot write {what} (exists and is not a regular file)")
            # the real suffix last: writers such as matplotlib pick the format from it
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.",
                                       suffix=f".tmp{Path(name).suffix}")
            os.close(fd)
            temps[target] = Path(tmp)
            _write(Path(tmp), content)
            _keep_mode(Path(tmp), target)
        for target, tmp in temps.items():
            os.replace(tmp, target)
    except OSError as exc:
        _undo(temps, created)
        where = exc.filename if exc.filename else directory
        raise ReportDirError(f"{where}: cannot write {what} ({exc.strerror or exc})") from None
    except BaseException:
        _undo(temps, created)
        raise
    return list(temps)


def current_umask() -> int:
    """The process umask, read without changing it where Linux says it (/proc), else by the
    set-and-restore that is the only portable way."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _keep_mode(tmp: Path, target: Path) -> None:
    """A file replaced keeps its mode (a private 0600 baseline stays private); a new one follows
    the umask."""
    try:
        os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
    except FileNotFoundError:
        follow_umask(tmp)


def follow_umask(path: Path, directory: bool = False) -> None:
    """Give a file (0666) or directory (0777) made private by mkstemp/mkdtemp the umask's mode."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def _write(path: Path, content: Content) -> None:
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        content(path)


def _make_dirs(directory: Path, what: str) -> list[Path]:
    """Create ``directory`` and missing parents; the ones created, deepest first."""
    missing = []
    probe = directory
    while not probe.exists() and not probe.is_symlink() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ReportDirError(f"{directory}: cannot write {what} (exists and is not a directory)") from None
    except OSError as exc:
        _remove_dirs(missing)
        raise ReportDirError(f"{directory}: cannot write {what} ({exc.strerror})") from None
    return missing


def _undo(temps: Mapping[Path, Path], created: list[Path]) -> None:
    for tmp in temps.values():
        with contextlib.suppress(OSError):
            tmp.unlink()
    _remove_dirs(created)


def _remove_dirs(created: list[Path]) -> None:
    for path in created:
        with contextlib.suppress(OSError):
            path.rmdir()  # only if still empty: never removes what someone else put there

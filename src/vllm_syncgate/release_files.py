"""The Python sources of a published release, fetched from the package index without the rest.

A vLLM CPU wheel is ~110 MB, but the scan reads ~2 MB of it (``vllm/v1/worker`` and friends).
Like pip's lazy wheels, the zip's central directory and then only the wanted members are read
with HTTP range requests (adjacent members in one request), so a release costs a few MB.
Sdists (gzip streams) are fetched whole, checked against the index's sha256, and only the wanted
members extracted. Everything lands in the cache; a partial fetch never appears under its final
name. The index is pip's (``$PIP_INDEX_URL``, else PyPI, through pip's own constant), so the
sweep works behind the same mirror pip does.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import urllib.request
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vllm_syncgate.errors import EnvironmentProblem

_TIMEOUT_S = 60
_GAP = 1 << 20  # members closer than this are read in one request
_EOCD_TAIL = 1 << 16


@dataclass(frozen=True)
class ReleaseFile:
    """One file of a release on the index."""

    project: str
    version: str
    filename: str
    url: str
    sha256: str
    size: int


def index_url() -> str:
    """The simple index pip uses: ``$PIP_INDEX_URL``, else pip's default (PyPI)."""
    configured = os.environ.get("PIP_INDEX_URL")
    if configured:
        return configured.rstrip("/")
    from pip._internal.models.index import PyPI  # pip's own constant; no host name here

    return PyPI.simple_url.rstrip("/")


def project_files(project: str) -> list[ReleaseFile]:
    """Every file the index lists for ``project`` (PEP 691 JSON), yanked ones left out."""
    request = urllib.request.Request(
        f"{index_url()}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            data = json.load(response)
    except (OSError, ValueError) as exc:
        raise EnvironmentProblem(f"package index: cannot list {project} ({exc})") from exc
    files = []
    for item in data.get("files", []):
        if item.get("yanked"):
            continue
        name = item["filename"]
        version = _version_of(project, name)
        if version is None:
            continue
        files.append(ReleaseFile(project, version, name, item["url"],
                                 item.get("hashes", {}).get("sha256", ""), int(item.get("size") or 0)))
    return files


def _version_of(project: str, filename: str) -> str | None:
    stem = project.replace("-", "_")
    if filename.endswith(".whl"):
        parts = filename.split("-")
        return parts[1] if len(parts) >= 5 and parts[0] == stem else None
    for suffix in (".tar.gz", ".zip"):
        if filename.endswith(suffix) and filename.startswith(stem + "-"):
            return filename[len(stem) + 1 : -len(suffix)]
    return None


def fetch_members(release: ReleaseFile, prefixes: Iterable[str], dest: Path) -> Path:
    """The ``.py`` files under ``prefixes`` (``vllm/v1/worker/``, ``vllm/v1/outputs.py``) of
    ``release``, extracted to ``dest`` (returned). An sdist's top folder is dropped, so both
    kinds give ``dest/<package>/...``. Cached: an existing ``dest`` is returned as it is."""
    if dest.is_dir():
        return dest
    wanted = tuple(prefixes)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
        staging = Path(tmp) / "tree"
        staging.mkdir()
        if release.filename.endswith(".whl"):
            count = _lazy_wheel(release, wanted, staging)
        else:
            count = _sdist(release, wanted, staging, Path(tmp))
        if not count:
            raise EnvironmentProblem(f"{release.filename}: nothing under {', '.join(wanted)}")
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(dest)
        os.replace(staging, dest)
    return dest


def tree_digest(root: Path) -> str:
    """sha256 over the sorted relative paths and contents of the ``.py`` files under ``root``:
    a range-read wheel cannot be checked against the index's whole-file hash, so the table pins
    this instead, and a release whose sources change fails rather than drifts."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _wanted(name: str, prefixes: tuple[str, ...]) -> bool:
    return name.endswith(".py") and any(name == p or name.startswith(p) for p in prefixes)


def _safe(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise EnvironmentProblem(f"archive member {name!r} leaves the release tree")
    return path


def _get(url: str, start: int | None = None, end: int | None = None) -> bytes:
    headers = {} if start is None else {"Range": f"bytes={start}-{'' if end is None else end}"}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=_TIMEOUT_S) as response:
            if start is not None and response.status != 206:
                raise EnvironmentProblem(f"{url}: the server ignores range requests")
            return response.read()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot download {url.rsplit('/', 1)[-1]} ({exc})") from exc


class _RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file: reads come from prefetched spans, else one
    range request each (pip's lazy wheel does the same)."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos = url, size, 0
        self.spans: list[tuple[int, bytes]] = []
        self.requests = 0

    def prefetch(self, start: int, end: int) -> None:
        end = min(end, self.size)
        if start < end:
            self.spans.append((start, _get(self.url, start, end - 1)))
            self.requests += 1

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        for start, blob in self.spans:
            if start <= self.pos and end <= start + len(blob):
                data = blob[self.pos - start : end - start]
                break
        else:
            self.prefetch(self.pos, end)
            data = self.spans[-1][1]
        self.pos += len(data)
        return data


def _lazy_wheel(release: ReleaseFile, prefixes: tuple[str, ...], staging: Path) -> int:
    remote = _RangeFile(release.url, release.size)
    remote.prefetch(max(0, release.size - _EOCD_TAIL), release.size)
    try:
        with zipfile.ZipFile(remote) as archive:  # type: ignore[arg-type]
            members = sorted((i for i in archive.infolist() if _wanted(i.filename, prefixes)),
                             key=lambda i: i.header_offset)
            for run in _runs(members):
                remote.prefetch(run[0].header_offset, _end(run[-1]))
            for info in members:
                target = staging / _safe(info.filename)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(info))  # zipfile checks each CRC
    except (zipfile.BadZipFile, zlib.error, OSError) as exc:
        raise EnvironmentProblem(f"{release.filename}: cannot read ({exc})") from exc
    return len(members)


def _end(info: zipfile.ZipInfo) -> int:
    """Where a member's data ends, give or take its local header's extra field."""
    return info.header_offset + 30 + len(info.filename.encode()) + 1024 + info.compress_size


def _runs(members: list[zipfile.ZipInfo]) -> list[list[zipfile.ZipInfo]]:
    runs: list[list[zipfile.ZipInfo]] = []
    for info in members:
        if runs and info.header_offset - _end(runs[-1][-1]) < _GAP:
            runs[-1].append(info)
        else:
            runs.append([info])
    return runs


def _sdist(release: ReleaseFile, prefixes: tuple[str, ...], staging: Path, tmp: Path) -> int:
    archive = tmp / release.filename
    archive.write_bytes(_get(release.url))
    actual = hashlib.sha256(archive.read_bytes()).hexdigest()
    if release.sha256 and actual != release.sha256:
        raise EnvironmentProblem(
            f"{release.filename}: sha256 {actual} does not match the index's {release.sha256}")
    count = 0
    try:
        with tarfile.open(archive) as tar:
            for member in tar:
                inner = member.name.split("/", 1)[1] if "/" in member.name else ""
                if not member.isfile() or not _wanted(inner, prefixes):
                    continue
                source = tar.extractfile(member)
                if source is None:
                    continue
                target = staging / _safe(inner)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read())
                count += 1
    except (tarfile.TarError, OSError) as exc:
        raise EnvironmentProblem(f"{release.filename}: cannot extract ({exc})") from exc
    return count

"""Pinned upstream source trees that syncgate checks against, fetched once and cached.

vllm-ascend 0.23.0.post1 is the real "before" version of vllm-ascend PR #13382 (the V2 runner
syncs on ``num_computed_tokens_event`` every step). It exists on PyPI only as an sdist whose
``setup.py`` must run for ``pip download`` to succeed, so the download happens in a small
throwaway venv (setuptools, setuptools_scm, wheel) kept under the cache directory. The tarball is
verified by sha256 before anything is extracted; a partial download or extraction never becomes
visible under its final name.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from syncgate.errors import EnvironmentProblem

# sha256 of each sdist syncgate knows; an unlisted version cannot be verified, so it is refused.
ASCEND_SDIST_SHA256 = {
    "0.23.0.post1": "a3b9f4a5dd7aa50c37e03d1f35937c4ae5aeacc49b734cac74d59ce5757738e1",
}
# setup.py refuses to run without a chip type; any valid one will do for reading metadata.
_SOC_VERSION = "ascend910b1"
_PIP_TIMEOUT_S = 900
# What the sdist's setup.py needs to report its metadata (the versions the download was verified with).
_TOOL_REQUIREMENTS = ("setuptools>=65.5", "setuptools_scm==10.3.4", "wheel==0.48.0")


def cache_dir() -> Path:
    """``$SYNCGATE_CACHE_DIR``, else ``~/.cache/syncgate``."""
    return Path(os.environ.get("SYNCGATE_CACHE_DIR") or "~/.cache/syncgate").expanduser()


def ascend_sdist(version: str = "0.23.0.post1") -> Path:
    """The extracted source root of the vllm-ascend ``version`` sdist (contains ``vllm_ascend/``).

    Downloads, verifies and extracts it on first use; later calls return the cached tree.
    Raises ``EnvironmentProblem`` with the reason when it cannot be had.
    """
    expected = ASCEND_SDIST_SHA256.get(version)
    if expected is None:
        known = ", ".join(sorted(ASCEND_SDIST_SHA256))
        raise EnvironmentProblem(
            f"vllm-ascend {version}: no pinned sha256 for this version (known: {known})"
        )
    root = cache_dir() / "sdist"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cache dir {root}: cannot create it ({exc.strerror})") from exc
    source = root / f"vllm_ascend-{version}"
    with _locked(root / ".lock"):
        if (source / "vllm_ascend").is_dir():
            return source
        tarball = root / f"vllm_ascend-{version}.tar.gz"
        if not tarball.is_file() or _sha256(tarball) != expected:
            _download(version, root, tarball, expected)
        _extract(tarball, root, source)
    return source


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise downloads between processes (pytest-xdist workers) sharing one cache."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download(version: str, root: Path, tarball: Path, expected: str) -> None:
    pip = _tool_venv(root / ".pip-venv")
    with tempfile.TemporaryDirectory(dir=root, prefix=".download-") as tmp:
        _run(
            [str(pip), "download", "--no-deps", "--no-build-isolation", "-d", tmp,
             f"vllm-ascend=={version}"],
            what=f"pip download vllm-ascend=={version}",
            env={**os.environ, "SOC_VERSION": _SOC_VERSION},
        )
        got = Path(tmp) / tarball.name
        if not got.is_file():
            raise EnvironmentProblem(f"pip download vllm-ascend=={version}: no {tarball.name}")
        actual = _sha256(got)
        if actual != expected:
            raise EnvironmentProblem(
                f"{tarball.name}: sha256 {actual} does not match the pinned {expected}"
            )
        os.replace(got, tarball)


def _tool_venv(venv: Path) -> Path:
    """A venv with what the sdist's setup.py needs to report its metadata; returns its pip."""
    pip = venv / "bin" / "pip"
    marker = venv / ".syncgate-ready"
    if marker.is_file():
        return pip
    shutil.rmtree(venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(venv)], what="python -m venv")
    _run([str(pip), "install", "--quiet", *_TOOL_REQUIREMENTS],
         what=f"pip install {' '.join(_TOOL_REQUIREMENTS)}")
    marker.touch()
    return pip


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> None:
    """Run a child in its own process group; the whole group dies on timeout or Ctrl-C."""
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=_PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        _kill_group(proc)
        raise EnvironmentProblem(f"{what}: timed out after {_PIP_TIMEOUT_S}s") from exc
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        lines = [ln for ln in out.splitlines() if ln.strip() and "is ignored" not in ln]
        tail = lines[-1].strip() if lines else "no output"
        raise EnvironmentProblem(f"{what}: exit {proc.returncode}: {tail}")


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _extract(tarball: Path, root: Path, source: Path) -> None:
    top = source.name
    with tempfile.TemporaryDirectory(dir=root, prefix=".extract-") as tmp:
        try:
            with tarfile.open(tarball) as archive:
                members = archive.getmembers()
                outside = [m.name for m in members if m.name.split("/", 1)[0] != top]
                if outside:
                    raise EnvironmentProblem(f"{tarball}: member {outside[0]!r} is outside {top}/")
                if hasattr(tarfile, "data_filter"):
                    archive.extractall(tmp, members=members, filter="data")
                else:  # Python < 3.10.12: names were checked above
                    archive.extractall(tmp, members=members)
        except (tarfile.TarError, OSError) as exc:
            raise EnvironmentProblem(f"{tarball}: cannot extract ({exc})") from exc
        shutil.rmtree(source, ignore_errors=True)
        os.replace(Path(tmp) / top, source)

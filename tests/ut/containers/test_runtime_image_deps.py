"""The CPU runtime image installs syncgate without its test extra, so the CLI the gate runs must
load without pytest. This failed for real: `syncgate check` in the image died importing pytest
through `vllm_syncgate.commands.repro`. Reproduced here by blocking the test-only packages."""

import subprocess
import sys
import textwrap

import pytest

BLOCKED = ("pytest", "_pytest", "hypothesis", "xdist")

PROBE = textwrap.dedent(f"""
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {BLOCKED!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}} (test extra not installed)")
            return None

    sys.meta_path.insert(0, Block())
    from vllm_syncgate.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def _cli(*args):
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_probe_really_blocks_pytest():
    result = subprocess.run([sys.executable, "-c", PROBE.replace("from vllm_syncgate.cli import main",
                                                                 "import pytest")],
                            capture_output=True, text=True, timeout=60, check=False)
    assert "test extra not installed" in result.stderr


@pytest.mark.slow
def test_every_command_loads_without_the_test_extra():
    result = _cli("check", "--help")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "--device" in result.stdout

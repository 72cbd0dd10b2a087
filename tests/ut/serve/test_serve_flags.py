"""Every spelling vLLM's parser maps to a reserved option is caught (vllm_syncgate.serve.flags)."""

from __future__ import annotations

import pytest

from vllm_syncgate.serve.flags import reserved_flag


@pytest.mark.parametrize(("token", "option"), [
    ("--host", "--host"), ("--hos", "--host"), ("--h", "--host"), ("--host=0.0.0.0", "--host"),
    ("--ho=::", "--host"), ("--por", "--port"), ("--port=80", "--port"), ("--po", "--port"),
    ("--api_key", "--api-key"), ("--api-k", "--api-key"), ("--served_model", "--served-model-name"),
    ("--ud", "--uds"), ("--host.x", "--host"), ("--config", "--config"), ("--conf=a.yaml", "--config"),
])
def test_reserved_spellings(token, option):
    assert reserved_flag(token) == option


@pytest.mark.parametrize("token", [
    "--dtype", "--enforce-eager", "--max-model-len=512", "--api-server-count", "--config-format",
    "--compilation-config.level", "-tp", "0.0.0.0", "--", "-O3", "--seed",
])
def test_ordinary_flags_and_values_pass(token):
    assert reserved_flag(token) is None


@pytest.mark.slow
def test_every_reserved_abbreviation_is_really_one_in_vllms_parser():
    """The premise: vLLM's serve parser takes these abbreviations, so matching prefixes matters."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    args = parser.parse_args(["--hos", "0.0.0.0", "--por", "9999", "--api_k", "k"])
    assert (args.host, args.port, args.api_key) == ("0.0.0.0", 9999, ["k"])


def test_the_server_never_has_the_working_directory_on_its_path(tmp_path):
    from vllm_syncgate.serve.vllm import vllm_argv, vllm_server

    argv = vllm_argv(tmp_path, 8000, [])
    assert argv[1:4] == ["-P", "-m", "vllm_syncgate.serve.shim"]
    server = vllm_server(tmp_path, [], env={"PYTHONSAFEPATH": "0"}, log_path=tmp_path / "l",
                         name="x", port=8000)
    assert server.env["PYTHONSAFEPATH"] == "1"  # inherited by the EngineCore and the worker


def test_the_shim_refuses_a_vllm_from_anywhere_but_the_named_one(tmp_path):
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-P", "-m", "vllm_syncgate.serve.shim", "--help"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "SYNCGATE_VLLM_DIR": str(tmp_path / "overlay/vllm")})
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"not from {tmp_path / 'overlay/vllm'}")
    assert "syncgate: vllm was imported from " in done.stderr

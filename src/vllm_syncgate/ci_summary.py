"""A Markdown summary for a CI job page (GitHub Actions' ``$GITHUB_STEP_SUMMARY``).

The file is appended to, not replaced: every step of a job adds its own section to it.
"""

from __future__ import annotations

import os
from pathlib import Path

from vllm_syncgate.errors import ReportDirError
from vllm_syncgate.escaping import terminal_block
from vllm_syncgate.safeio import append_regular

ENV = "GITHUB_STEP_SUMMARY"


def summary_path(option: str | None) -> Path | None:
    """``--github-summary FILE``, else ``$GITHUB_STEP_SUMMARY`` when set (in a GitHub step)."""
    chosen = option or os.environ.get(ENV) or None
    return Path(chosen) if chosen else None


def append_summary(path: Path, markdown: str) -> None:
    """Append one section; a FIFO or device is refused with one line, never waited on. The
    caller escapes its cells (:mod:`vllm_syncgate.escaping`); control bytes left over (log text)
    are shown as ``\\xNN`` here."""
    data = (terminal_block(markdown.rstrip("\n")) + "\n\n").encode("utf-8")
    try:
        append_regular(path, data)
    except OSError as exc:
        where = terminal_block(str(path))
        raise ReportDirError(f"{where}: cannot write the job summary ({exc.strerror})") from None

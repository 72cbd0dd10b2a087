"""A Markdown summary for a CI job page (GitHub Actions' ``$GITHUB_STEP_SUMMARY``).

The file is appended to, not replaced: every step of a job adds its own section to it.
"""

from __future__ import annotations

import os
from pathlib import Path

from vllm_syncgate.errors import ReportDirError
from vllm_syncgate.reportfiles import printable

ENV = "GITHUB_STEP_SUMMARY"


def summary_path(option: str | None) -> Path | None:
    """``--github-summary FILE``, else ``$GITHUB_STEP_SUMMARY`` when set (in a GitHub step)."""
    chosen = option or os.environ.get(ENV) or None
    return Path(chosen) if chosen else None


def append_summary(path: Path, markdown: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(printable(markdown.rstrip("\n")) + "\n\n")  # log text may hold escapes
    except OSError as exc:
        raise ReportDirError(f"{path}: cannot write the job summary ({exc.strerror})") from None


def md_cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")

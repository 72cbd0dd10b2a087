"""Shared by the benchmark scripts: print a table and write the JSON next to it."""

from __future__ import annotations

import json
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def emit(name: str, rows: list[dict[str, Any]], summary: dict[str, Any]) -> Path:
    """Print ``rows`` as an aligned table plus the summary; write both to results/<name>.json."""
    if rows:
        columns = list(rows[0])
        widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in columns}
        print("  ".join(c.ljust(widths[c]) for c in columns))
        for row in rows:
            print("  ".join(_fmt(row.get(c)).ljust(widths[c]) for c in columns))
    for key, value in summary.items():
        print(f"{key}: {_fmt(value)}")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "benchmark": name,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine()},
        "rows": rows,
        "summary": summary,
    }
    path.write_text(json.dumps(payload, indent=2))
    print(f"wrote {path}")
    return path


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)

"""One escaping rule per output format, for text that came from an untrusted tree, log or report.

A scanned branch controls its file names, qualnames and code lines; a CI log or a report.json
controls the text the annotator repeats. Each format has one function here, applied where the
text leaves the program:

- terminal: :func:`terminal` (one line: every control byte, ESC/OSC, CR, LF and C1 included, as
  ``\\xNN``) and :func:`terminal_block` (the same, newlines kept) -- nothing can move the cursor,
  retitle the window or clear the screen;
- GitHub workflow commands: :func:`command_data` / :func:`command_property` (the documented
  ``%``, CR, LF escapes, ``:`` and ``,`` in properties; other control bytes as ``\\xNN``) -- no
  input starts a line, so no ``::stop-commands::`` or ``::add-mask::`` at column 0;
- Markdown: :func:`md_text` and :func:`md_code` (table-cell safe: pipes, backticks, newlines);
- JSON and SARIF: :func:`json_safe` (every string valid UTF-8).

A byte that is not UTF-8 reaches Python as a lone surrogate (``surrogateescape``); every function
shows it as ``\\xNN``, the byte it stands for, so no writer crashes on it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# DEL, C1 controls, the Unicode line/paragraph separators some terminals and editors break lines
# at, the XML non-characters, and lone surrogates (undecodable bytes); C0 comes on top.
_OTHER = "\x7f-\x9f\u2028\u2029\ufffe\uffff\ud800-\udfff"
_LINE = re.compile(f"[\x00-\x1f{_OTHER}]")
_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHER}]")  # TAB and LF kept
_SURROGATE = re.compile("[\ud800-\udfff]")


def _hex(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the undecodable byte itself
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """``text`` as one safe terminal line: every control character shown as ``\\xNN``."""
    return _LINE.sub(_hex, text)


def terminal_block(text: str) -> str:
    """:func:`terminal` for several lines: newlines and tabs kept, CR and the rest escaped."""
    return _BLOCK.sub(_hex, text)


def command_data(text: str) -> str:
    """The message of a workflow command (after ``::``): GitHub's ``%``, CR, LF escapes, and
    the other control characters (ESC, NUL, C1) as ``\\xNN``."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return terminal(text)


def command_property(text: str) -> str:
    """A ``key=value`` property (file, title): :func:`command_data` plus ``:`` and ``,``."""
    return command_data(text).replace(":", "%3A").replace(",", "%2C")


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")  # what starts emphasis, a link, HTML, a cell


def md_text(text: str) -> str:
    """Plain text in a Markdown table cell or list item: punctuation Markdown or HTML would read
    backslash-escaped, control characters (newlines too) as ``\\xNN``."""
    return _MD_SPECIAL.sub(r"\\\1", terminal(text))


def md_code(text: str) -> str:
    """``text`` as a code span that survives a table cell: a fence longer than any backtick run
    inside, pipes as ``\\|`` (GitHub splits cells before it reads spans), one line."""
    # a backslash before a pipe would escape the escape: shown as \x5c
    body = terminal(text).replace("\\|", "\\x5c|").replace("|", "\\|")
    run = max((len(m) for m in re.findall("`+", body)), default=0)
    fence = "`" * (run + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def json_safe(value: Any) -> Any:
    """``value`` with every string (keys too) valid UTF-8: undecodable bytes as ``\\xNN``."""
    if isinstance(value, str):
        return _SURROGATE.sub(_hex, value)
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def each_text(value: T, escape: Callable[[str], str]) -> T:
    """A copy of ``value`` (a str, list, tuple, dict or dataclass of them) with ``escape``
    applied to every string in it: a formatter escapes a whole result once, up front."""
    if isinstance(value, str):
        return escape(value)  # type: ignore[return-value]
    if isinstance(value, list | tuple):
        return type(value)(each_text(v, escape) for v in value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {k: each_text(v, escape) for k, v in value.items()}  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: each_text(getattr(value, f.name), escape)
                   for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)  # type: ignore[return-value]
    return value

"""Source lines as Python numbers them, and the comments Python sees.

``str.splitlines()`` also breaks at form feeds, ``\\x1c``-``\\x1e``, ``\\x85`` and U+2028/2029;
Python ends a line only at ``\\n``, ``\\r\\n`` or ``\\r``. One such character would shift every
later line, so an allow comment or a baseline key would land on the wrong code. Every place that
maps a line number to text goes through here.
"""

from __future__ import annotations

import io
import tokenize


def python_lines(text: str) -> list[str]:
    """``text``'s lines, numbered as ``ast`` numbers them, without their line endings (split
    at ``\n`` alone, twice as fast, when there is no ``\r``: every file of a scan is split)."""
    if "\r" in text:
        return [line.rstrip("\r\n") for line in io.StringIO(text, newline="").readlines()]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the text ends with a line ending (or is empty): no line after it
    return lines


def comments(text: str) -> dict[int, str]:
    """Line number -> the text of the comment token on it: real comments only, never text inside
    a string literal. A file the tokenizer stops in keeps the comments read before that point."""
    found: dict[int, str] = {}
    tokens = tokenize.generate_tokens(io.StringIO(text, newline="").readline)
    try:
        for token in tokens:
            if token.type == tokenize.COMMENT:
                found[token.start[0]] = token.string
    except (tokenize.TokenError, SyntaxError):
        pass
    return found

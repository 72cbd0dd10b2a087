"""GitHub Actions workflow commands (``::error file=...,line=...::message``), escaped once.

A message or property holding ``%``, a newline, ``:`` or ``,`` would otherwise cut the command
short or point the annotation at the wrong place.
"""

from __future__ import annotations


def escape_data(text: str) -> str:
    """The message part, after ``::``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A ``key=value`` property value (file, title)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(level: str, message: str, *, file: str | None = None,
                     line: int | None = None, title: str | None = None) -> str:
    """``::level file=F,line=N,title=T::message``; ``line`` only with a ``file``."""
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
        if line is not None:
            props.append(f"line={line}")
    if title is not None:
        props.append(f"title={escape_property(title)}")
    return f"::{level}{' ' + ','.join(props) if props else ''}::{escape_data(message)}"

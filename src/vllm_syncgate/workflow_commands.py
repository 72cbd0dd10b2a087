"""GitHub Actions workflow commands (``::error file=...,line=...::message``), escaped once.

A message or property holding ``%``, a newline, ``:`` or ``,`` would otherwise cut the command
short, point the annotation at the wrong place, or start a line of its own (``::stop-commands::``
turns every later annotation off); the rules are :mod:`vllm_syncgate.escaping`'s.
"""

from __future__ import annotations

from vllm_syncgate.escaping import command_data, command_property


def workflow_command(level: str, message: str, *, file: str | None = None,
                     line: int | None = None, title: str | None = None) -> str:
    """``::level file=F,line=N,title=T::message``; ``line`` only with a ``file``."""
    props = []
    if file:
        props.append(f"file={command_property(file)}")
        if line is not None:
            props.append(f"line={line}")
    if title is not None:
        props.append(f"title={command_property(title)}")
    return f"::{level}{' ' + ','.join(props) if props else ''}::{command_data(message)}"

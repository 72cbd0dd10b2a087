"""One flag vocabulary for every subcommand, and the old spellings kept for one release.

- ``--device NAME``: a built-in device profile (cpu, cuda, npu), and with it its budget;
- ``--profile FILE``: a profile TOML of your own;
- ``--report-dir DIR``: a directory of report files; ``--output FILE``: one file.

An old spelling still works until syncgate 0.2 and says so in one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

#: The release that drops the old spellings.
REMOVED_IN = "0.2"


def deprecation(prog: str, old: str, new: str) -> str:
    return f"{prog}: warning: {old} is deprecated, use {new} (the old spelling goes in syncgate {REMOVED_IN})"


class _Renamed(argparse.Action):
    """An old option name: stores into the new option's ``dest`` and prints one warning line."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(deprecation(parser.prog, str(option_string), self.new), file=sys.stderr)
        setattr(namespace, self.dest, values)


def renamed(parser: argparse.ArgumentParser, old: str, new: str, dest: str, **kwargs: Any) -> None:
    """Accept ``old`` as a hidden alias of ``new`` (same ``dest``; the new flag's default stays)."""
    parser.add_argument(old, dest=dest, action=_Renamed, new=new, help=argparse.SUPPRESS,
                        default=argparse.SUPPRESS, **kwargs)

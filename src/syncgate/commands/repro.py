"""``syncgate repro``: placeholder until its issue lands."""

from __future__ import annotations

import argparse

from syncgate.errors import UsageError

HELP = "(not implemented yet)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs="*")


def run(args: argparse.Namespace) -> int:
    raise UsageError("not implemented yet")

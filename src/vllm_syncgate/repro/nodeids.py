"""Node ids from a log are claims; the locally collected test tree is the truth.

Nothing taken from a CI log reaches pytest unless it is a node id (or a file) that pytest itself
collected here, so a crafted log cannot smuggle options or paths into the rerun: the argv the
engine builds holds only strings that came back from ``pytest --collect-only``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from vllm_syncgate.repro.junit import junit_address
from vllm_syncgate.repro.logs import TextScanner, clean_line
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome
from vllm_syncgate.repro.runner import PytestResult, Runner, check_exit
from vllm_syncgate.repro.testfiles import CONFIG_FILES, rules_from

_COLLECTING = re.compile(r"^_+ ERROR collecting (\S.*?) _+$")
_LISTED = re.compile(r"^[^\s:=_][^:\n]*\.py::\S.*$")
_SAFE = re.compile(r"^[^\s\-/\x00][^\x00\n\r]*$")


def file_of(nodeid: str) -> str:
    """The file part of a node id (``a/b.py::K::t[x]`` -> ``a/b.py``)."""
    return nodeid.split("::", 1)[0]


def plausible(nodeid: str) -> bool:
    """A shape check before anything touches the filesystem: relative ``*.py`` path, no option."""
    path = file_of(nodeid)
    return (bool(_SAFE.match(nodeid)) and path.endswith(".py")
            and ".." not in path.split("/") and not path.startswith("~"))


@dataclass
class LocalTree:
    """What ``pytest --collect-only`` found for the files the log names."""

    nodeids: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)  # files that exist locally
    refused: dict[str, str] = field(default_factory=dict)  # file -> why it is no test file
    errors: dict[str, str] = field(default_factory=dict)  # file -> collection problem
    by_address: dict[tuple[str, str], str] = field(default_factory=dict)

    def has(self, target: str) -> bool:
        """A node id collected here, or a file with at least one collected test."""
        if target in self.nodeids:
            return True
        prefix = target + "::"
        return "::" not in target and any(n.startswith(prefix) for n in self.nodeids)

    def resolve(self, failure: CiFailure) -> str:
        """The local node id for a failure (xunit2 addresses are mapped through the tree)."""
        if failure.address is not None and failure.outcome is not CiOutcome.COLLECTION_ERROR:
            return self.by_address.get(failure.address, failure.nodeid)
        return failure.nodeid


def parse_collect_output(text: str) -> tuple[set[str], dict[str, str]]:
    """Node ids (``-q`` listing) and collection errors from ``pytest --collect-only -q`` output."""
    nodeids: set[str] = set()
    listing = True
    errors_log = CiLog(source="collect", format="pytest")
    scanner = TextScanner(errors_log)
    reasons: dict[str, str] = {}
    current = None
    for raw in text.splitlines():
        line = clean_line(raw)
        if listing:
            # The -q listing ends at the first banner; stray lines (a warning from the
            # environment) before it are skipped, not taken as the end.
            if line.startswith("=") or (" collected" in line and " in " in line):
                listing = False
            elif _LISTED.match(line):
                nodeids.add(line.rstrip())
                continue
        banner = _COLLECTING.match(line)
        if banner:
            current = banner.group(1)
        elif current and line.startswith("E   "):
            reasons[current] = line[4:].strip()  # the last E line is the exception itself
        scanner.feed(line)
    errors = {f.nodeid: reasons.get(f.nodeid) or f.detail or "error collecting"
              for f in errors_log.failures if f.outcome is CiOutcome.COLLECTION_ERROR}
    return nodeids, errors


def rerun_files(runner: Runner, candidates: Iterable[str]) -> tuple[LocalTree, list[str]]:
    """The files named by ``candidates`` that exist, and those pytest would collect as tests.

    Nothing is imported: the tree holds files and refusals only; the list is what may be
    handed to pytest (a validated path, never a node id)."""
    files = sorted({file_of(c) for c in candidates if plausible(c)})
    tree = LocalTree()
    if not files:
        return tree, []
    tree.files = runner.existing(files)
    rules = rules_from(runner.config_texts(CONFIG_FILES))
    tree.refused = {f: why for f in sorted(tree.files) if (why := rules.refusal(f)) is not None}
    return tree, sorted(tree.files - set(tree.refused))


def collected_in_session(tree: LocalTree, result: PytestResult) -> LocalTree:
    """Fill ``tree`` from a rerun session that was given whole files (``report_collected``):
    the node ids its plugin recorded (and any a run reported), its collection errors."""
    for record in result.records:
        if record.get("role") == "collected":
            tree.nodeids.update(record.get("nodeids", ()))
        elif record.get("nodeid"):
            tree.nodeids.add(record["nodeid"])
    tree.errors = parse_collect_output(result.output)[1]
    return tree


def collect(runner: Runner, candidates: Iterable[str]) -> LocalTree:
    """Collect the files named by ``candidates`` (node ids or files) in the runner's tree."""
    tree, files = rerun_files(runner, candidates)
    if not files:
        return tree
    args = ["--collect-only", "-q", "-rfE", "-p", "no:randomly",
            "--continue-on-collection-errors", *files]
    if runner.has_module("xdist"):
        args[:0] = ["-n", "0"]  # collect in this process even if addopts asks for workers
    result = check_exit(runner.pytest(args), runner.description)
    tree.nodeids, tree.errors = parse_collect_output(result.output)
    if result.exit_code not in (0, 1, 2, 5) and not tree.nodeids:
        tree.errors.update(dict.fromkeys(tree.files, f"collection exited {result.exit_code}"))
    tree.by_address = {junit_address(n): n for n in tree.nodeids}
    for path in tree.files:
        tree.by_address.setdefault(junit_address(path), path)
    return tree

"""JUnit XML in, node ids out (streaming ``iterparse``; elements are freed as they are read).

pytest's ``xunit1`` family writes ``file=`` so the node id can be rebuilt exactly. The default
``xunit2`` does not: ``classname`` mixes the dotted module path with the class, so the pair
``(classname, name)`` is kept as an *address* and mapped back onto a node id against the locally
collected tree (:func:`junit_address` is the forward mapping used to build that index).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from vllm_syncgate.errors import LogParseError
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome

_COLLECTION_MESSAGES = ("collection failure", "collection error")


def junit_address(nodeid: str) -> tuple[str, str]:
    """The ``(classname, name)`` pytest's junitxml writes for ``nodeid``."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def _xunit1_nodeid(file: str, classname: str, name: str) -> str | None:
    module = re.sub(r"\.py$", "", file.replace("/", "."))
    if classname == module:
        return f"{file}::{name}"
    if classname.startswith(module + "."):
        classes = classname[len(module) + 1:].split(".")
        return "::".join([file, *classes, name])
    return None


def _testcase(case: ET.Element, log: CiLog, suite: str) -> None:
    log.tests_seen += 1
    problem = None
    for child in case:
        if child.tag in ("failure", "error"):
            problem = child
            break
    if problem is None:
        return
    classname = case.get("classname", "")
    name = case.get("name", "")
    message = problem.get("message", "")
    if problem.tag == "error" and message in _COLLECTION_MESSAGES:
        path = classname if classname else name.replace(".", "/") + ".py"
        log.failures.append(CiFailure(path, CiOutcome.COLLECTION_ERROR, suite,
                                      detail=message, address=(classname, name)))
        return
    outcome = CiOutcome.FAILED if problem.tag == "failure" else CiOutcome.ERROR
    file = case.get("file")
    nodeid = _xunit1_nodeid(file, classname, name) if file else None
    address = None if nodeid else (classname, name)
    log.failures.append(CiFailure(nodeid or f"{classname}::{name}", outcome, suite,
                                  detail=message.splitlines()[0] if message else "",
                                  address=address))


def scan_junit(path: Path, log: CiLog) -> None:
    """Read every ``<testcase>`` with a ``<failure>`` or ``<error>`` child."""
    suite = ""
    saw_root = False
    try:
        for event, element in ET.iterparse(path, events=("start", "end")):
            if event == "start":
                if not saw_root:
                    if element.tag not in ("testsuites", "testsuite"):
                        raise LogParseError(f"{path}: XML root <{element.tag}> is not JUnit")
                    saw_root = True
                if element.tag == "testsuite":
                    suite = element.get("name", "")
                continue
            if element.tag == "testcase":
                _testcase(element, log, suite)
                element.clear()
            elif element.tag == "properties":
                for prop in element:
                    if prop.get("name") == "randomly_seed" and (prop.get("value") or "").isdigit():
                        log.seed = int(prop.get("value", "0"))
    except ET.ParseError as exc:
        if not saw_root or (log.tests_seen == 0 and not log.failures):
            raise LogParseError(f"{path}: not well-formed JUnit XML ({exc})") from exc
        log.truncated = True

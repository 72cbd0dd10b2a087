"""JUnit XML as syncgate writes it (``syncgate check``, ``syncgate repro``): one shape, one text.

Only builds the document; :mod:`vllm_syncgate.reportfiles` writes it with the report's other files.
The ``<testsuite>`` counts are taken from its test cases when the text is made, so they cannot
disagree with them, and the text passes :func:`~vllm_syncgate.reportfiles.printable`: messages carry
CI output, and a control byte there would make the file unreadable XML.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from vllm_syncgate.reportfiles import printable

#: ``<testsuite>`` count attribute -> the child tag that makes a test case count there.
_COUNTED = {"failures": "failure", "errors": "error", "skipped": "skipped"}


def new_suite(name: str) -> ET.Element:
    return ET.Element("testsuite", name=name)


def add_case(suite: ET.Element, classname: str, name: str, *, file: str | None = None,
             line: int | None = None, time: float | None = None) -> ET.Element:
    """A ``<testcase>``; ``file``/``line`` (xunit1) let CI annotators point at code."""
    attrs = {"classname": classname, "name": name}
    if file is not None:
        attrs["file"] = file
    if line is not None:
        attrs["line"] = str(line)
    if time is not None:
        attrs["time"] = f"{time:.3f}"
    return ET.SubElement(suite, "testcase", attrs)


def to_xml(suite: ET.Element) -> str:
    """The document's text, with ``tests``/``failures``/``errors``/``skipped`` counted."""
    _count(suite)
    return printable(ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n")


def suites_to_xml(suites: list[ET.Element]) -> str:
    """One ``<testsuites>`` document of several suites (``syncgate check``: one per level),
    each suite and the root counted from their cases."""
    root = ET.Element("testsuites")
    for suite in suites:
        _count(suite)
        root.append(suite)
    for attr in ("tests", *_COUNTED):
        root.set(attr, str(sum(int(s.get(attr, "0")) for s in suites)))
    return printable(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")


def _count(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    for attr, tag in _COUNTED.items():
        suite.set(attr, str(sum(case.find(tag) is not None for case in cases)))

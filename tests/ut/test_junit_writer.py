"""One JUnit shape for check and repro: counts from the cases, CI text made printable."""

import xml.etree.ElementTree as ET

from vllm_syncgate import junit_writer


def test_counts_come_from_the_cases_and_control_bytes_are_shown():
    suite = junit_writer.new_suite("s")
    junit_writer.add_case(suite, "c", "passes", file="t.py", line=3, time=0.5)
    ET.SubElement(junit_writer.add_case(suite, "c", "fails"), "failure", message="bad\x1b[31m")
    ET.SubElement(junit_writer.add_case(suite, "c", "errs"), "error", message="env")
    ET.SubElement(junit_writer.add_case(suite, "c", "skips"), "skipped", message="missing")
    text = junit_writer.to_xml(suite)
    root = ET.fromstring(text.encode())
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "4", "failures": "1", "errors": "1", "skipped": "1"}
    first = root.find("testcase")
    assert (first.get("file"), first.get("line"), first.get("time")) == ("t.py", "3", "0.500")
    assert root.find("testcase/failure").get("message") == "bad\\x1b[31m"

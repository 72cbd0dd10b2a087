"""One minimal fixture per root cause seen on real upstream code (issue 12): the scan reports
exactly the lines marked ``# expect: KIND GUARD`` in each, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan.callgraph import scan


@pytest.mark.parametrize(
    ("fixture", "entry"),
    [
        ("polarity.py", "PolarityModelRunner.execute_model"),
        ("residence.py", "execute_model"),
        ("misses.py", "MissesModelRunner.execute_model"),
    ],
)
def test_root_cause_fixture(scan_data, expected_sites, fixture, entry):
    path = scan_data / "rootcauses" / fixture
    result = scan([str(path)], entries=[entry])
    reported = {(Path(f.file).name, f.line, f.kind, f.guard) for f in result.findings}
    expected = expected_sites(path)
    assert expected
    assert reported == expected

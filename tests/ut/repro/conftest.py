from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data" / "repro"


@pytest.fixture
def repro_logs() -> Path:
    """CI log fixtures, all of one CI run of the synthetic suite."""
    return DATA / "logs"


@pytest.fixture
def suite_dir() -> Path:
    """The synthetic suite with known failure behaviour (files named case_*.py)."""
    return DATA / "suite"

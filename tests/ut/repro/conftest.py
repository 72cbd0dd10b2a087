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


@pytest.fixture
def suite_outcome(suite_dir, monkeypatch):
    """``(test name, probability, run index) -> failed?`` exactly as the synthetic suite draws it."""
    monkeypatch.syspath_prepend(str(suite_dir))
    import suite_chance

    def failed(name: str, probability: float, run: int) -> bool:
        monkeypatch.setenv("SYNCGATE_REPRO_RUN", str(run))
        return suite_chance.fails(name, probability)

    return failed

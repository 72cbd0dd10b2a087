"""Shared by every test directory: where test data lives."""

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DATA_DIR = Path(__file__).parent / "data"
# Test data is read by tests, never collected as tests: tests/data/npu/upstream_example/ holds a test
# written for vllm-ascend's own suite, which the plugin tests run in a pytester tree of its own.
collect_ignore = ["data"]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA_DIR

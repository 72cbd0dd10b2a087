"""Servers booting together: how many at once (cores and memory), and what a boot says."""

from pathlib import Path

import pytest

from vllm_syncgate.check.run import SERVER_TREE_BYTES, servers_at_once
from vllm_syncgate.serve.vllm import boot_phase

BOOT_LOG = Path(__file__).resolve().parents[2] / "data" / "serve" / "vllm_boot_phases.log"
PLENTY = 64 * SERVER_TREE_BYTES


@pytest.mark.parametrize(("prestart", "groups", "cores", "memory", "expected"), [
    ("auto", 3, 2, PLENTY, 3),   # this machine: every server at once
    ("auto", 3, 1, PLENTY, 2),
    ("auto", 2, 16, PLENTY, 2),  # never more than there are groups
    ("auto", 3, 16, 2 * SERVER_TREE_BYTES, 2),  # memory caps it
    ("auto", 3, 16, 0, 1),       # one server at least
    (0, 3, 16, PLENTY, 1),       # a number is the profile's choice: 1 + prestart
    (1, 3, 16, PLENTY, 2),
    (5, 3, 2, PLENTY, 3),
])
def test_servers_at_once(prestart, groups, cores, memory, expected):
    assert servers_at_once(prestart, groups, cores=cores, available=memory) == expected


def test_boot_phase_follows_the_log():
    lines = BOOT_LOG.read_text().splitlines(keepends=True)
    phases = [boot_phase("".join(lines[:n])) for n in range(len(lines) + 1)]
    assert phases == [
        "API server importing vLLM", "API server importing vLLM", "engine core importing vLLM",
        "worker importing vLLM", "worker loading the model", "sizing the KV cache, warming up",
        "API server starting",
    ]

import pytest

from vllm_syncgate.environment import (
    HEADER_FIELDS,
    VERSION_FIELDS,
    format_header,
    header,
    header_differences,
    parse_header,
)


def test_header_round_trips_through_a_prefixed_log_line():
    env = {"syncgate": "0.1.0", "torch": "2.13.0+cpu", "flags": ["--enforce-eager"],
           "seed": 7, "image": "syncgate:cpu", "note": "line\nbreak ü"}
    line = format_header(env)
    assert "\n" not in line
    assert line.startswith("syncgate-env: {")
    assert parse_header("2026-04-25T05:18:16.2685185Z " + line) == env


def test_non_header_lines_are_not_headers():
    assert parse_header("plain text") is None
    assert parse_header("syncgate-env: [1, 2]") is None
    assert parse_header("syncgate-env: {truncated") is None


def test_differences_only_count_shared_keys():
    assert header_differences({"torch": "a", "vllm": "x", "seed": 1}, {"torch": "b", "vllm": "x"}) \
        == {"torch": ("a", "b")}


def test_header_has_every_version_field_and_only_listed_run_fields(monkeypatch):
    monkeypatch.setenv("SYNCGATE_IMAGE", "img:1")
    fields = header(device="cpu", seed=3)
    assert set(VERSION_FIELDS) <= set(fields) <= set(HEADER_FIELDS)
    assert (fields["image"], fields["device"], fields["seed"]) == ("img:1", "cpu", 3)
    assert header(image=None)["image"] is None
    with pytest.raises(TypeError, match="gpu"):
        header(gpu="x")

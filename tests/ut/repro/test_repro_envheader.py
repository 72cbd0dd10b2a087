from syncgate.repro.envheader import env_differences, format_env_header, parse_env_header


def test_header_round_trips_through_a_prefixed_log_line():
    env = {"syncgate": "0.1.0", "torch": "2.13.0+cpu", "flags": ["--enforce-eager"],
           "seed": 7, "image": "syncgate:cpu", "note": "line\nbreak ü"}
    line = format_env_header(env)
    assert "\n" not in line
    assert line.startswith("syncgate-env: {")
    assert parse_env_header("2026-04-25T05:18:16.2685185Z " + line) == env


def test_non_header_lines_are_not_headers():
    assert parse_env_header("plain text") is None
    assert parse_env_header("syncgate-env: [1, 2]") is None
    assert parse_env_header("syncgate-env: {truncated") is None


def test_differences_only_count_shared_keys():
    assert env_differences({"torch": "a", "vllm": "x", "seed": 1}, {"torch": "b", "vllm": "x"}) \
        == {"torch": ("a", "b")}

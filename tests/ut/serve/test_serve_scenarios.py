"""Scenario plumbing that needs no server: prompts, the reference plan, Prometheus counters."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from vllm_syncgate.serve.client import Completion, OpenAIClient
from vllm_syncgate.serve.scenarios import (
    CONCURRENCY,
    LONG_BASE,
    PREEMPTION_ROUNDS,
    SCENARIOS,
    SHORT_BASE,
    Context,
    _max_tokens,
    load_prompts,
    reference_requests,
)

METRICS = """# HELP vllm:num_preemptions_total Cumulative number of preemptions.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 3.0
vllm:num_preemptions_total{engine="1",model_name="m"} 2.0
vllm:num_preemptions_created 1.7e9
"""


def test_prompts_are_fixed_and_long_ones_vary_in_length():
    short, long = load_prompts()
    assert (short, long) == load_prompts()
    assert len(short) == len(long) == CONCURRENCY
    assert len({len(p) for p in long}) == len(long)
    assert min(len(p) for p in long) > 3 * max(len(p) for p in short)


def test_reference_plan_covers_every_max_tokens():
    short, long = load_prompts()
    plan = dict(reference_requests(short, long))
    assert all(plan[p] >= _max_tokens(CONCURRENCY - 1, SHORT_BASE) for p in short)
    assert all(plan[p] >= _max_tokens(CONCURRENCY - 1, LONG_BASE) for p in long)
    assert all(plan[p] >= 40 for p in short)  # stop_and_max_tokens goes up to 40


def test_every_scenario_has_a_summary_and_a_source_line():
    for name, scenario in SCENARIOS.items():
        assert scenario.summary, name
        file, line = scenario.location
        assert file.endswith("scenarios.py")
        assert line > 0


def test_metric_sums_a_counter_over_label_sets():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(METRICS.encode())

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        ctx = Context(OpenAIClient(f"http://127.0.0.1:{httpd.server_address[1]}", "m"), [], [])
        assert ctx.metric("vllm:num_preemptions_total") == 5.0
        assert ctx.metric("vllm:spec_decode_num_drafts_total") == 0.0
    finally:
        httpd.shutdown()
        httpd.server_close()


class _CountingServer:
    """A stand-in client whose preemption counter moves after a given number of rounds."""

    def __init__(self, preempting_round):
        self.calls = 0
        self.preempting_round = preempting_round

    def complete(self, prompt, max_tokens):
        self.calls += 1
        return Completion([1, 2], [3] * max_tokens, "x", "length")

    def preemptions(self):
        rounds = self.calls // CONCURRENCY
        return 2.0 if self.preempting_round and rounds >= self.preempting_round else 0.0


def _preemption_context(server):
    _, long = load_prompts()
    ctx = Context(server, [], long)
    ctx.metric = lambda name: server.preemptions()
    return ctx


def test_preemption_sends_the_round_again_until_the_counter_moves():
    server = _CountingServer(preempting_round=3)
    outcome = SCENARIOS["preemption"].run(_preemption_context(server))
    assert outcome.problems == []
    assert outcome.notes == ["2 preemptions in 3 round(s)"]
    assert len(outcome.generations) == 3 * CONCURRENCY
    assert outcome.generations[0].label == "long[0]"
    assert outcome.generations[-1].label == f"long(round 3)[{CONCURRENCY - 1}]"


def test_preemption_fails_when_no_round_preempts():
    server = _CountingServer(preempting_round=None)
    outcome = SCENARIOS["preemption"].run(_preemption_context(server))
    assert outcome.problems == [f"no request was preempted in {PREEMPTION_ROUNDS} rounds: the KV "
                                "cache is not small enough"]
    assert server.calls == PREEMPTION_ROUNDS * CONCURRENCY

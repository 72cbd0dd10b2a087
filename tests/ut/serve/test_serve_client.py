"""The OpenAI client against a canned HTTP server: token ids, batches, streams, errors."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from vllm_syncgate.errors import RequestError
from vllm_syncgate.serve.client import OpenAIClient


def _choice(index, prompt_ids, token_ids, text, finish="length", logprobs=None):
    return {"index": index, "prompt_token_ids": prompt_ids, "token_ids": token_ids, "text": text,
            "finish_reason": finish, "logprobs": logprobs}


class _Canned(BaseHTTPRequestHandler):
    replies: ClassVar[list] = []
    seen: ClassVar[list] = []
    headers_seen: ClassVar[list] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        type(self).headers_seen.append(dict(self.headers))
        status, payload = type(self).replies.pop(0)
        self.send_response(status)
        if isinstance(payload, list):  # server-sent events
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in payload:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
        else:
            self.end_headers()
            self.wfile.write(payload.encode() if isinstance(payload, str) else
                             json.dumps(payload).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def canned():
    _Canned.replies, _Canned.seen, _Canned.headers_seen = [], [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield OpenAIClient(f"http://127.0.0.1:{httpd.server_address[1]}", "m", timeout_s=5), _Canned
    httpd.shutdown()
    httpd.server_close()


def test_complete_asks_for_greedy_token_ids(canned):
    client, server = canned
    server.replies.append((200, {"choices": [_choice(0, [1, 5], [7, 8], "ab")]}))
    out = client.complete("hi", 2, stop=["x"])
    assert (out.prompt_token_ids, out.token_ids, out.text) == ([1, 5], [7, 8], "ab")
    sent = server.seen[0]
    assert server.headers_seen[0]["Connection"] == "close"
    assert sent["temperature"] == 0.0
    assert sent["return_token_ids"]
    assert sent["ignore_eos"]
    assert sent["stop"] == ["x"]
    assert "logprobs" not in sent


def test_complete_many_orders_choices_by_index(canned):
    client, server = canned
    server.replies.append((200, {"choices": [_choice(1, [2], [9], "b"), _choice(0, [1], [8], "a")]}))
    outs = client.complete_many(["a", "b"], 1)
    assert [o.token_ids for o in outs] == [[8], [9]]


def test_complete_many_with_missing_choices_is_an_error(canned):
    client, server = canned
    server.replies.append((200, {"choices": [_choice(0, [1], [8], "a")]}))
    with pytest.raises(RequestError, match="asked for 2 completions, got 1"):
        client.complete_many(["a", "b"], 1)


def test_stream_joins_deltas(canned):
    client, server = canned
    server.replies.append((200, [
        {"choices": [{"token_ids": [4, 5], "text": "x", "finish_reason": None,
                      "prompt_token_ids": [1, 2]}]},
        {"choices": [{"token_ids": [6], "text": "y", "finish_reason": "length",
                      "prompt_token_ids": None}]},
    ]))
    out = client.complete_streaming("p", 3)
    assert (out.prompt_token_ids, out.token_ids, out.text, out.finish_reason) == (
        [1, 2], [4, 5, 6], "xy", "length")


def test_http_error_is_a_request_error_with_detail(canned):
    client, server = canned
    server.replies.append((400, "{\"error\": \"max_tokens too large\"}"))
    with pytest.raises(RequestError, match=r"HTTP 400.*max_tokens too large"):
        client.complete("p", 10**6)


def test_unreachable_server_is_a_request_error():
    client = OpenAIClient("http://127.0.0.1:9", "m", timeout_s=2)
    with pytest.raises(RequestError, match="ConnectionError"):
        client.complete("p", 1)


def test_logprob_mode_parses_token_id_keys(canned):
    client, server = canned
    client.top_logprobs = 2
    logprobs = {"top_logprobs": [{"token_id:7": -0.1, "token_id:3": -2.5}]}
    server.replies.append((200, {"choices": [_choice(0, [1], [7], "a", logprobs=logprobs)]}))
    out = client.complete("p", 1)
    assert out.top_logprobs == [{7: -0.1, 3: -2.5}]
    assert server.seen[0]["logprobs"] == 2
    assert server.seen[0]["return_tokens_as_token_ids"]


def test_logprob_keys_that_are_not_token_ids_are_rejected(canned):
    client, server = canned
    server.replies.append((200, {"choices": [_choice(0, [1], [7], "a",
                                                     logprobs={"top_logprobs": [{"a": -0.1}]})]}))
    with pytest.raises(RequestError, match="not a token id"):
        client.complete("p", 1)

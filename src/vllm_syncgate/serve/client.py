"""A small client for vLLM's OpenAI-compatible completions API, in token ids.

Parity is judged on token ids, not text, so every request asks for ``return_token_ids``. Logprobs
are only asked for by a client made with :meth:`OpenAIClient.with_logprobs` (the logprob-parity
requests): a logprobs request adds readbacks to every runner step that serves it, and on CPU it
triggers an inductor compile of the logprob kernel even under ``--enforce-eager`` (20 s, once).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import requests

from vllm_syncgate.errors import RequestError

Prompt = str | Sequence[int]
_TOKEN_ID_PREFIX = "token_id:"
# A fresh connection per request: uvicorn drops idle keep-alive connections after 5 s, and a
# pooled one reused just then fails with "connection reset" (seen under preemption on a loaded
# machine). Loopback connects cost microseconds; a completion costs milliseconds.
_ONE_SHOT = {"Connection": "close"}


@dataclass
class Completion:
    """One choice of a completion: what the server saw and what it produced."""

    prompt_token_ids: list[int]
    token_ids: list[int]
    text: str
    finish_reason: str | None
    top_logprobs: list[dict[int, float]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_token_ids": self.prompt_token_ids,
            "token_ids": self.token_ids,
            "text": self.text,
            "finish_reason": self.finish_reason,
        }


@dataclass
class StreamChunk:
    """One streamed delta."""

    token_ids: list[int]
    text: str
    finish_reason: str | None
    prompt_token_ids: list[int] | None = None


@dataclass
class OpenAIClient:
    """Greedy completions from one served model."""

    base_url: str
    model: str
    timeout_s: float = 120.0
    top_logprobs: int = 0
    session: requests.Session = field(default_factory=requests.Session)

    def with_logprobs(self, top_k: int) -> OpenAIClient:
        """The same client asking for the ``top_k`` logprobs of every generated token."""
        return replace(self, top_logprobs=top_k)

    def _body(self, prompt: Prompt | list[str], max_tokens: int, stop: Sequence[str] | None,
              stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt if isinstance(prompt, str) else list(prompt),
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "ignore_eos": True,
            "return_token_ids": True,
            "stream": stream,
        }
        if stop:
            body["stop"] = list(stop)
        if self.top_logprobs:
            body["logprobs"] = self.top_logprobs
            body["return_tokens_as_token_ids"] = True
        return body

    def _post(self, body: dict[str, Any], stream: bool = False) -> requests.Response:
        url = f"{self.base_url}/v1/completions"
        try:
            response = self.session.post(url, json=body, timeout=self.timeout_s, stream=stream,
                                         headers=_ONE_SHOT)
        except requests.RequestException as exc:
            raise RequestError(f"POST {url}: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            detail = response.text[:300].replace("\n", " ")
            response.close()
            raise RequestError(f"POST {url}: HTTP {response.status_code}: {detail}")
        return response

    def complete_many(self, prompts: Sequence[Prompt], max_tokens: int,
                      stop: Sequence[str] | None = None) -> list[Completion]:
        """One request carrying every prompt (vLLM batches them); choices in prompt order."""
        if all(isinstance(p, str) for p in prompts):
            payload: Any = list(prompts)
        else:
            payload = [list(p) for p in prompts]  # type: ignore[arg-type]
        data = self._post(self._body(payload, max_tokens, stop, stream=False)).json()
        choices = sorted(data.get("choices", []), key=lambda c: c["index"])
        if len(choices) != len(prompts):
            raise RequestError(f"asked for {len(prompts)} completions, got {len(choices)}")
        return [_completion(choice) for choice in choices]

    def complete(self, prompt: Prompt, max_tokens: int,
                 stop: Sequence[str] | None = None) -> Completion:
        body = self._body(prompt, max_tokens, stop, stream=False)
        data = self._post(body).json()
        try:
            return _completion(data["choices"][0])
        except (KeyError, IndexError, TypeError) as exc:
            raise RequestError(f"unexpected completion response ({exc!r})") from None

    def stream(self, prompt: Prompt, max_tokens: int,
               stop: Sequence[str] | None = None) -> Iterator[StreamChunk]:
        """Server-sent deltas; closing the generator early closes the connection (an abort)."""
        response = self._post(self._body(prompt, max_tokens, stop, stream=True), stream=True)
        try:
            for raw in response.iter_lines():
                line = raw.decode("utf-8")
                if not line.startswith("data: "):
                    continue
                payload = line[len("data: "):]
                if payload == "[DONE]":
                    return
                choice = json.loads(payload)["choices"][0]
                yield StreamChunk(
                    token_ids=list(choice.get("token_ids") or []),
                    text=choice.get("text", ""),
                    finish_reason=choice.get("finish_reason"),
                    prompt_token_ids=choice.get("prompt_token_ids"),
                )
        except requests.RequestException as exc:
            raise RequestError(f"stream from {self.base_url}: {type(exc).__name__}: {exc}") from None
        finally:
            response.close()

    def complete_streaming(self, prompt: Prompt, max_tokens: int,
                           stop: Sequence[str] | None = None) -> Completion:
        """The streamed deltas joined into one completion."""
        prompt_ids: list[int] = []
        tokens: list[int] = []
        text: list[str] = []
        finish: str | None = None
        for chunk in self.stream(prompt, max_tokens, stop):
            prompt_ids = chunk.prompt_token_ids or prompt_ids
            tokens.extend(chunk.token_ids)
            text.append(chunk.text)
            finish = chunk.finish_reason or finish
        return Completion(prompt_ids, tokens, "".join(text), finish)


def _completion(choice: dict[str, Any]) -> Completion:
    top: list[dict[int, float]] | None = None
    logprobs = choice.get("logprobs")
    if logprobs and logprobs.get("top_logprobs"):
        top = [
            {_token_id(key): float(value) for key, value in position.items()}
            for position in logprobs["top_logprobs"]
        ]
    return Completion(
        prompt_token_ids=list(choice.get("prompt_token_ids") or []),
        token_ids=list(choice.get("token_ids") or []),
        text=choice.get("text", ""),
        finish_reason=choice.get("finish_reason"),
        top_logprobs=top,
    )


def _token_id(key: str) -> int:
    if not key.startswith(_TOKEN_ID_PREFIX):
        raise RequestError(f"logprob key {key!r} is not a token id (return_tokens_as_token_ids?)")
    return int(key[len(_TOKEN_ID_PREFIX):])

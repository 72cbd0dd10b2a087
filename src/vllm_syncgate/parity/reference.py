"""The HF transformers fp32 greedy reference on the same weights the server loaded.

The reference is fed the server's own ``prompt_token_ids``, so tokenisation can never be the
difference. Generation is a plain argmax loop over the KV cache rather than ``generate()``: no
generation-config defaults (EOS, repetition penalties, min length) can change what "greedy"
means, and the logits of every step are at hand for the logprob mode.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import ModelDirError


@dataclass
class ReferenceOutput:
    token_ids: list[int]
    top_logprobs: list[dict[int, float]]


class HFReference:
    """Loads the model once; caches the longest generation per prompt."""

    def __init__(self, model_dir: str | Path, top_k: int = 5, threads: int | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        if threads is not None:  # leave the other core to a server booting meanwhile
            torch.set_num_threads(threads)
        self._torch = torch
        self.top_k = top_k
        try:
            self.model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
            self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelDirError(f"{model_dir}: HF transformers cannot load it ({first})") from None
        self.model.eval()
        self._cache: dict[tuple[int, ...], ReferenceOutput] = {}

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int) -> ReferenceOutput:
        key = tuple(prompt_ids)
        cached = self._cache.get(key)
        if cached is None or len(cached.token_ids) < max_new_tokens:
            cached = self._greedy(key, max_new_tokens)
            self._cache[key] = cached
        return ReferenceOutput(cached.token_ids[:max_new_tokens],
                               cached.top_logprobs[:max_new_tokens])

    def _greedy(self, prompt_ids: tuple[int, ...], steps: int) -> ReferenceOutput:
        torch = self._torch
        tokens: list[int] = []
        tops: list[dict[int, float]] = []
        with torch.inference_mode():
            inputs = torch.tensor([prompt_ids], dtype=torch.long)
            past: Any = None
            for _ in range(steps):
                out = self.model(input_ids=inputs, past_key_values=past, use_cache=True)
                past = out.past_key_values
                logprobs = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
                values, indices = torch.topk(logprobs, self.top_k)
                token = int(torch.argmax(logprobs))
                tokens.append(token)
                tops.append({int(i): float(v) for i, v in zip(indices, values, strict=True)})
                inputs = torch.tensor([[token]], dtype=torch.long)
        return ReferenceOutput(tokens, tops)

    def decode(self, token_ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(token_ids)))

    def outputs(self) -> dict[tuple[int, ...], ReferenceOutput]:
        """The longest output generated per prompt: what a fanned-out gate's merge judges with."""
        return dict(self._cache)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text)["input_ids"])


class WarmReference:
    """Builds the reference in a background thread while servers boot (each wants one core).

    ``warm`` lists (prompt text, tokens) pairs to generate ahead, tokenised by the HF tokenizer;
    the judge later asks by the server's prompt ids, which hit this cache when they agree and are
    generated on demand when they do not. ``result()`` stops the warm-up early and returns the
    reference (re-raising anything the thread hit).
    """

    def __init__(self, model_dir: str | Path, warm: Sequence[tuple[str, int]]) -> None:
        self._model_dir = model_dir
        self._warm = list(warm)
        self._stop = threading.Event()
        self._reference: HFReference | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="syncgate-hf-reference",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._reference = HFReference(self._model_dir, threads=1)
            for text, tokens in self._warm:
                if self._stop.is_set():
                    return
                self._reference.generate(self._reference.encode(text), tokens)
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def close(self) -> None:
        """Stop the warm-up and wait for the thread: a process that exits while it is still inside
        torch's native code (an import, a forward) aborts instead of exiting with its own code."""
        self._stop.set()
        self._thread.join()

    def result(self) -> HFReference:
        self.close()
        if self._error is not None:
            raise self._error
        assert self._reference is not None
        return self._reference

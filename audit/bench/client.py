"""One streamed completion with the arrival time of every generated token.

The request asks for `stream_options: {include_usage: true, continuous_usage_stats: true}`, with
which vLLM v0.26.0 puts a cumulative `usage` on every chunk
(`vllm/entrypoints/openai/completion/serving.py: completion_stream_generator`, `usage.completion_tokens
= previous_num_tokens`). A chunk's tokens are the increment of `usage.completion_tokens` over the one
before, so a chunk that bundles several tokens (speculative decoding, `--stream-interval`, a slow
reader) counts each of them at its arrival time, and a chunk that carries no token (empty text
with no increment) counts none. The time to first token is that of the first chunk with a token.
A count past the request's `max_tokens` is the server's error, never a list of that many timestamps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from audit.bench.clock import RunClock
from audit.generate.openai_http import (
    Malformed,
    NoProgress,
    OpenAIServer,
    Rejected,
    ServerError,
    TokenProgress,
    Transient,
    error_event_text,
)

PATH = "/v1/completions"


class NoChunkUsage(Malformed):
    """The server streamed a chunk without `usage`: it ignored `continuous_usage_stats`."""


@dataclass
class StreamOutcome:
    """What one request returned; becomes a `BenchRequestRow`."""

    started_at: float
    finished_at: float
    token_times: list[float] = field(default_factory=list)
    chunks: int = 0
    bundled_chunks: int = 0
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    ended: Literal["done", "cut", "error"] = "done"
    error: str | None = None

    @property
    def first_token_at(self) -> float | None:
        return round(self.started_at + self.token_times[0], 6) if self.token_times else None


def request_body(model: str, prompt: str, max_tokens: int, ignore_eos: bool) -> dict[str, Any]:
    """Greedy decoding to the cap, one choice, usage on every chunk."""
    return {
        "model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0, "n": 1,
        "ignore_eos": ignore_eos, "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }


def _count(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise Malformed(f"POST {PATH}: {what} is {value!r}, not a count")
    return value


def _error_text(e: ServerError, silent: float, stall_s: float) -> str:
    """A failed stream's error: a silent socket past the read timeout says so (NoProgress says its own)."""
    if isinstance(e, Transient) and not isinstance(e, NoProgress) and silent >= stall_s * 0.98:
        return f"stalled: no event for {silent:.1f} s (read timeout {stall_s:g} s)"
    return str(e)


def stream_completion(server: OpenAIServer, body: dict[str, Any], clock: RunClock, *, cut_at: float | None,
                      stall_s: float, request_id: str | None = None) -> StreamOutcome:
    """Send one streamed completion; time every token. Stops reading (closing the connection, which
    makes vLLM abort the request) at the first event after `cut_at` (run-clock time).

    Raises NoChunkUsage when the server does not report usage per chunk (nothing can be counted by
    token); every other failure is returned as an outcome with `ended="error"`.
    """
    t0 = time.perf_counter()
    out = StreamOutcome(started_at=round(clock.at(t0), 6), finished_at=0.0)
    # Every token the server claims becomes a timestamp here: no more than were asked for may arrive.
    asked = int(body["max_tokens"])
    last_event = t0
    done_tokens = 0
    final_usage: dict[str, Any] | None = None
    progress = TokenProgress(stall_s)  # only a token is progress: comment lines and empty deltas are not
    events = server.stream(PATH, body, request_id=request_id, progress=progress)
    try:
        for event in events:
            now = time.perf_counter()
            last_event = now
            if "error" in event:
                raise Rejected(f"POST {PATH}: error in stream: {error_event_text(event)}")
            choices = event.get("choices")
            if not isinstance(choices, list):
                raise Malformed(f"POST {PATH}: stream event without a `choices` list")
            usage = event.get("usage")
            if not choices:
                if isinstance(usage, dict):
                    final_usage = usage
                continue
            if not isinstance(usage, dict):
                raise NoChunkUsage(f"POST {PATH}: a chunk came without `usage`: the server does not report usage "
                                   "per chunk (stream_options.continuous_usage_stats), so tokens cannot be timed")
            total = _count(usage.get("completion_tokens"), "usage.completion_tokens")
            if total > asked:
                raise Malformed(f"POST {PATH}: the server claims {total} completion tokens; the request asked for "
                                f"max_tokens {asked}")
            if usage.get("prompt_tokens") is not None:
                out.prompt_tokens = _count(usage.get("prompt_tokens"), "usage.prompt_tokens")
            new = total - done_tokens
            if new < 0:
                raise Malformed(f"POST {PATH}: usage.completion_tokens went down from {done_tokens} to {total}")
            if new:
                progress.advance()
                offset = round(now - t0, 6)
                out.token_times.extend([offset] * new)
                out.chunks += 1
                out.bundled_chunks += new > 1
                done_tokens = total
            for choice in choices:
                if isinstance(choice, dict) and choice.get("finish_reason") is not None:
                    out.finish_reason = str(choice["finish_reason"])
            if cut_at is not None and clock.at(now) >= cut_at and out.finish_reason is None:
                out.ended = "cut"
                break
        if out.ended == "done":
            if final_usage is None:
                raise Malformed(f"POST {PATH}: the stream carried no final usage")
            total = _count(final_usage.get("completion_tokens"), "usage.completion_tokens")
            if total != done_tokens:
                raise Malformed(f"POST {PATH}: per-chunk usage adds up to {done_tokens} tokens, the final usage "
                                f"says {total}")
            out.prompt_tokens = _count(final_usage.get("prompt_tokens"), "usage.prompt_tokens")
    except NoChunkUsage:
        raise
    except ServerError as e:
        out.ended = "error"
        out.error = _error_text(e, time.perf_counter() - last_event, stall_s)
    finally:
        events.close()  # type: ignore[attr-defined]  # a generator; OpenAIServer.stream is typed Iterator
    out.finished_at = round(clock.at(time.perf_counter()), 6)
    return out


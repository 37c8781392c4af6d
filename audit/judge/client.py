"""One judge call over an OpenAI-compatible chat endpoint, under `audit generate`'s stream bounds.

The request is read by `audit.generate.openai_http.OpenAIServer.read_stream`, the one reader of generated text
(`generate` reads its replies with it too): the request deadline (a server dripping bytes is cut there), bytes per
line and in all, the progress deadline (no chunk of text for the server's `timeout`: comment lines and empty
chunks do not hold the call open), and more chunks of text than `max_tokens`. The reply is collected as sent: its
text, the per-token logprobs when asked for, finish reason, usage (kept when it is a count; a judge endpoint may
send none) and the served model id.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from audit.generate.openai_http import Cut, Malformed, OpenAIServer, Rejected, ServerError, Transient

PATH = "/v1/chat/completions"


@dataclass
class CallResult:
    """What one call returned (or why it gave nothing usable)."""

    raw: str | None = None
    logprobs: list[dict[str, Any]] | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model_served: str | None = None
    started_at: float = 0.0
    latency_s: float = 0.0
    retries: int = 0
    error: str | None = None
    errors: list[str] = field(default_factory=list)
    """Each transient failure retried, in order."""


def _count(usage: Any, name: str) -> int | None:
    v = usage.get(name) if isinstance(usage, dict) else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _collect(server: OpenAIServer, body: dict[str, Any], out: CallResult) -> None:
    reply = server.read_stream(PATH, body, chat=True)
    out.model_served = reply.model or out.model_served
    out.raw = reply.text
    out.logprobs = reply.logprobs or None
    out.finish_reason = reply.finish_reason
    out.prompt_tokens = _count(reply.usage, "prompt_tokens")
    out.completion_tokens = _count(reply.usage, "completion_tokens")


def call_judge(server: OpenAIServer, body: dict[str, Any], *, retries: int = 2, backoff_s: float = 0.5) -> CallResult:
    """Send one streamed chat request; retry a transient failure up to `retries` times. Never raises for what the
    server does: a failure is the result's `error`."""
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    out = CallResult(started_at=time.time())
    t0 = time.monotonic()
    for attempt in range(retries + 1):
        try:
            _collect(server, body, out)
            out.error = None
            break
        except Transient as e:
            out.errors.append(str(e))
            out.error = str(e)
            if attempt == retries:
                break
            out.retries += 1
            time.sleep(backoff_s * (2 ** attempt))
        except (Rejected, Malformed, Cut, ServerError) as e:
            out.error = str(e)
            out.raw = None
            break
    if out.error is not None:
        out.raw, out.logprobs = None, None
    out.latency_s = time.monotonic() - t0
    return out

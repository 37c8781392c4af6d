"""One judge call over an OpenAI-compatible chat endpoint, under `audit generate`'s stream bounds.

The request is streamed through `audit.generate.openai_http.OpenAIServer.stream`, the one gate every streamed
reply passes: a total deadline (a server dripping bytes is cut there), bytes per line and in all, and here, as in
`generate`, more chunks of text than `max_tokens` cut the stream. The reply is collected as sent: its text, the
per-token logprobs when asked for, finish reason, usage and the served model id.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from audit.generate.openai_http import Cut, Malformed, OpenAIServer, Rejected, ServerError, Transient


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


def _collect(server: OpenAIServer, body: dict[str, Any], out: CallResult) -> None:
    path = "/v1/chat/completions"
    budget = body.get("max_completion_tokens", body.get("max_tokens"))
    pieces: list[str] = []
    logprobs: list[dict[str, Any]] = []
    texts = 0
    usage: dict[str, Any] | None = None
    finish: str | None = None
    for event in server.stream(path, body):
        if "error" in event:
            err = event["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            code = err.get("code") if isinstance(err, dict) else None
            cls = Transient if isinstance(code, int) and code >= 500 else Rejected
            # a server's error event without a message (vLLM's, for a structured-output backend it cannot
            # import) is recorded as sent: an empty reason says nothing
            detail = str(msg) if msg else json.dumps(event, sort_keys=True)
            raise cls(f"POST {path}: error in stream: {detail[:200]}")
        if isinstance(event.get("model"), str):
            out.model_served = event["model"]
        choices = event.get("choices")
        if not isinstance(choices, list):
            raise Malformed(f"POST {path}: stream event without a `choices` list")
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                raise Malformed(f"POST {path}: unexpected choice (one choice was asked for)")
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise Malformed(f"POST {path}: `delta` is not an object")
            piece = delta.get("content")
            if piece is not None and not isinstance(piece, str):
                raise Malformed(f"POST {path}: generated text is {type(piece).__name__}, not a string")
            if piece:
                pieces.append(piece)
                texts += 1
                if isinstance(budget, int) and texts > budget:
                    raise Cut(f"cut: POST {path}: the stream carried more than {budget} chunks of text, over "
                              f"max_tokens {budget}")
            lp = choice.get("logprobs")
            if isinstance(lp, dict) and isinstance(lp.get("content"), list):
                logprobs.extend(x for x in lp["content"] if isinstance(x, dict))
            if choice.get("finish_reason") is not None:
                finish = str(choice["finish_reason"])
        if isinstance(event.get("usage"), dict):
            usage = event["usage"]
    if finish is None:
        raise Malformed(f"POST {path}: the stream reached [DONE] without a finish_reason")
    out.raw = "".join(pieces)
    out.logprobs = logprobs or None
    out.finish_reason = finish
    if usage is not None:
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        out.prompt_tokens = pt if isinstance(pt, int) and not isinstance(pt, bool) and pt >= 0 else None
        out.completion_tokens = ct if isinstance(ct, int) and not isinstance(ct, bool) and ct >= 0 else None


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

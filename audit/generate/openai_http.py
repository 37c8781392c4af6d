"""A small client for vLLM's OpenAI-compatible server, on the standard library alone.

Only what `audit generate` needs: `/health`, `/version`, `/v1/models`, `/tokenize`,
and streamed `/v1/completions` and `/v1/chat/completions` with a final usage chunk.
Protocol details follow vLLM v0.26.0 (commit ffd46bfab, the wheel's `vllm/_version.py`):

- `vllm/entrypoints/serve/instrumentator/health.py`: `GET /health` is 200 when the
  engine is alive, 503 when it is dead.
- `vllm/entrypoints/serve/instrumentator/basic.py`: `GET /version` -> `{"version": ...}`.
- `vllm/entrypoints/openai/models/serving.py`, `.../engine/protocol.py` (ModelCard):
  `GET /v1/models` -> `{"data": [{"id", "root", "max_model_len", ...}]}`.
- `vllm/entrypoints/serve/tokenize/protocol.py`: `POST /tokenize` takes either
  `{"prompt", "add_special_tokens" (default true)}` or `{"messages",
  "add_generation_prompt" (default true), "add_special_tokens" (default false)}` and
  returns `{"count", "max_model_len", "tokens"}`; the chat form renders the messages
  with the server's chat template exactly as the chat endpoint does
  (`serving.py: create_tokenize` -> `online_renderer.preprocess_chat`).
- `vllm/entrypoints/openai/completion/serving.py`, `.../chat_completion/serving.py`:
  with `"stream": true, "stream_options": {"include_usage": true}` the server sends
  `data: {json}` events, each with `choices[0].text` (completions) or
  `choices[0].delta.content` (chat) and `finish_reason` on the last one, then one
  event with `"choices": []` and `usage`, then `data: [DONE]`. An error inside the
  stream is sent as `data: {"error": {"message", "type", "code"}}`
  (`generate/base/serving.py: create_streaming_error_response`).

Errors are sorted by what the caller should do: `Transient` (connection refused or
dropped, 5xx, a stream cut before `[DONE]`) may succeed when retried; `Rejected`
(4xx) will not; `Malformed` (a reply that is not the protocol: bad JSON, missing
fields) is recorded as that request's error, and so is `Cut` (a reply cut at a bound).

Every request is bounded whatever the server does: by total time (connect, headers and
the whole body: a watchdog shuts the socket at the deadline, so a server dripping one
byte a second is cut there, not after each read), by bytes per line and in all, and a
stream by its text: more chunks of text than `max_tokens` (each carries at least one
token) end it, and so does no chunk of text for the progress deadline (`TokenProgress`,
checked at every line, so comment lines or empty chunks do not hold a stream open).
`OpenAIServer.read_stream` is the one reader of generated text (`generate`, the judge).
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


class ServerError(Exception):
    """A request to the server did not give a usable reply."""


class Transient(ServerError):
    """Connection refused or dropped, a 5xx status, or a stream cut short: worth retrying."""


class Rejected(ServerError):
    """The server refused the request (4xx): retrying the same request will not help."""


class Malformed(ServerError):
    """The reply does not follow the protocol (bad JSON, missing or mistyped fields)."""


class Cut(ServerError):
    """The reply passed a bound (total time, bytes, tokens) and was cut there: the row's error, not retried."""


MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longest line of a streamed reply read (a vLLM event carries a few tokens: hundreds of bytes)."""

MAX_REPLY_BYTES = 256 * 1024 * 1024
"""Most bytes of one reply read (a 65,536-token stream is about 20 MB of events)."""


class NoProgress(Cut):
    """A stream went on sending (comment lines, chunks without a token) but no token for the progress deadline."""


class TokenProgress:
    """The one progress deadline of a stream, counted in tokens: only a token moves it (`advance`), so a server
    that keeps the connection busy with comment lines or empty deltas is cut at `seconds`, not waited on for ever.
    `OpenAIServer.stream` checks it at every line it reads; the reader of the events advances it."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.last = time.monotonic()

    def advance(self) -> None:
        self.last = time.monotonic()

    def check(self, what: str) -> None:
        idle = time.monotonic() - self.last
        if idle >= self.seconds:
            raise NoProgress(f"stalled: {what}: no token for {idle:.1f} s while the stream went on (comment lines "
                             f"or chunks without a token; progress deadline {self.seconds:g} s)")


class _Deadline:
    """A request's deadline: at it, a watchdog thread shuts the connection's socket down, which ends
    any read blocked on it (a per-read timeout would let a server dripping bytes go on forever)."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.at = math.inf if seconds is None else time.monotonic() + seconds
        self.passed = False
        self._timer: threading.Timer | None = None

    def left(self, cap: float) -> float:
        """Seconds one socket operation may block: `cap`, or less as the deadline nears."""
        return max(0.001, min(cap, self.at - time.monotonic()))

    def watch(self, sock: socket.socket) -> None:
        """Start the watchdog on a connected socket (held here: http.client drops its own reference
        to it once a `Connection: close` reply has begun)."""
        if self.seconds is None:
            return

        def fire() -> None:
            self.passed = True
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        self._timer = threading.Timer(max(0.0, self.at - time.monotonic()), fire)
        self._timer.daemon = True
        self._timer.start()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def check(self, what: str) -> None:
        if self.passed or time.monotonic() >= self.at:
            self.passed = True
            raise Cut(f"cut: {what}: no complete reply within {self.seconds:g} s (the request timeout)")


_CONNECTION_ERRORS = (ConnectionError, socket.timeout, TimeoutError, http.client.HTTPException, OSError)


def _usage_count(path: str, usage: dict[str, Any], name: str) -> int:
    """`usage[name]` as a count of tokens; a reply without one is malformed."""
    v = usage.get(name)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise Malformed(f"POST {path}: usage.{name} is {v!r}, not a count")
    return v


def _error_message(status: int, body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            err = obj.get("error")
            if isinstance(err, dict) and isinstance(err.get("message"), str):
                return f"HTTP {status}: {err['message']}"
            if isinstance(obj.get("message"), str):
                return f"HTTP {status}: {obj['message']}"
    except json.JSONDecodeError:
        pass
    return f"HTTP {status}: {text[:300]}" if text else f"HTTP {status}"


def _choice_text(path: str, choice: Any, chat: bool) -> tuple[Any, Any]:
    """(text, reasoning) of one streamed choice, unchecked values; Malformed for a choice other than the one
    asked for, or a chat `delta` that is not an object."""
    if not isinstance(choice, dict) or choice.get("index", 0) != 0:
        raise Malformed(f"POST {path}: unexpected choice {str(choice)[:80]!r} (one choice was asked for)")
    if not chat:
        return choice.get("text"), None
    delta = choice.get("delta") or {}
    if not isinstance(delta, dict):
        raise Malformed(f"POST {path}: `delta` is not an object")
    return delta.get("content"), delta.get("reasoning") or delta.get("reasoning_content")


@dataclass
class StreamReply:
    """What one stream carried, as `OpenAIServer.read_stream` read it (usage as sent, unchecked), with client-side
    timings."""

    started_at: float
    """Wall clock (Unix seconds) just before the request was sent."""
    text: str = ""
    """The generated text (`choices[0].text`, or `delta.content` for chat), joined."""
    finish_reason: str = ""
    first_token_s: float | None = None
    """Seconds from `started_at` to the first event carrying generated text; None when none did."""
    finished_at: float = 0.0
    """Wall clock when `[DONE]` arrived."""
    texts: int = 0
    """Chunks that carried text (answer or reasoning): each holds at least one token."""
    usage: Any = None
    """The last `usage` the stream sent, as sent; None when it sent none."""
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    """Per-token logprobs (`choices[0].logprobs.content`) in order, when the server sent them."""
    response_id: str | None = None
    model: str | None = None
    """The model id the stream named (the last string `model` of its events)."""
    stop_reason: Any = None
    """vLLM's `stop_reason`: the stop string or token id that ended the text, when one did."""
    reasoning: str | None = None
    """Text a reasoning parser separated from the answer (`delta.reasoning`), when the server has one."""
    events: int = 0


@dataclass
class StreamResult(StreamReply):
    """What one streamed generation request returned (`OpenAIServer.generate`): the reply with its usage checked."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


def error_event_text(event: dict[str, Any]) -> str:
    """What a stream's error event says: its message, or, where it has none (vLLM 0.26.0's, for a structured-output
    backend it could not import), the event as sent, since an empty reason says nothing."""
    err = event["error"]
    msg = err.get("message") if isinstance(err, dict) else err
    return str(msg) if msg else json.dumps(event, sort_keys=True)


@dataclass
class OpenAIServer:
    """One server, by base URL (`http://host:port`). Each request opens its own connection (thread-safe)."""

    url: str
    timeout: float = 600.0
    """Seconds a connect or a single read may block (a stream gets this long between events)."""
    deadline: float | None = None
    """Seconds one request may take in all: connect, headers and the whole reply (streamed or not);
    None: only `timeout` per read. A request given its own timeout (health, tokenize) takes it per read
    and, when shorter than this, in all."""
    max_line_bytes: int = MAX_LINE_BYTES
    """Longest line of a streamed reply; a longer one cuts the request."""
    max_reply_bytes: int = MAX_REPLY_BYTES
    """Most bytes of one reply; more cut the request."""
    _parts: urllib.parse.SplitResult = field(init=False, repr=False)

    def __post_init__(self) -> None:
        url = self.url.rstrip("/")
        if "://" not in url:
            url = "http://" + url
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {self.url!r}")
        self.url = url
        self._parts = parts

    # ------------------------------------------------------------------ plumbing

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        p = self._parts
        assert p.hostname, "__post_init__ refuses a URL without one"
        cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
        return cls(p.hostname, p.port, timeout=timeout)

    def _path(self, path: str) -> str:
        base = self._parts.path.rstrip("/")
        return f"{base}{path}"

    def _request(self, method: str, path: str, body: Any = None, *, timeout: float | None = None,
                 headers: dict[str, str] | None = None
                 ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse, _Deadline]:
        """Send a request and read the status and headers, under a deadline the caller must cancel."""
        total = [t for t in (self.deadline, timeout) if t is not None]
        deadline = _Deadline(min(total) if total else None)
        conn = self._connection(deadline.left(self.timeout if timeout is None else timeout))
        hdrs = {"Accept": "application/json", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        try:
            conn.connect()  # (bounded by the socket timeout: at most the time left)
            deadline.watch(conn.sock)
            conn.request(method, self._path(path), body=data, headers=hdrs)
            resp = conn.getresponse()
        except _CONNECTION_ERRORS as e:
            deadline.cancel()
            conn.close()
            deadline.check(f"{method} {path}")
            raise Transient(f"{method} {path}: {type(e).__name__}: {e}") from None
        except BaseException:
            deadline.cancel()
            conn.close()
            raise
        return conn, resp, deadline

    def _read_body(self, resp: http.client.HTTPResponse, deadline: _Deadline, what: str) -> bytes:
        """A whole (non-streamed) reply body, at most `max_reply_bytes`."""
        try:
            raw = resp.read(self.max_reply_bytes + 1)
        except _CONNECTION_ERRORS as e:
            deadline.check(what)
            raise Transient(f"{what}: reply cut off: {type(e).__name__}: {e}") from None
        deadline.check(what)
        if len(raw) > self.max_reply_bytes:
            raise Cut(f"cut: {what}: reply is over the {self.max_reply_bytes:,}-byte limit")
        return raw

    def _json(self, method: str, path: str, body: Any = None, *, timeout: float | None = None) -> Any:
        conn, resp, deadline = self._request(method, path, body, timeout=timeout)
        try:
            raw = self._read_body(resp, deadline, f"{method} {path}")
            if resp.status >= 500:
                raise Transient(f"{method} {path}: {_error_message(resp.status, raw)}")
            if resp.status >= 400:
                raise Rejected(f"{method} {path}: {_error_message(resp.status, raw)}")
            try:
                return json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise Malformed(f"{method} {path}: reply is not JSON ({e})") from None
        finally:
            deadline.cancel()
            conn.close()

    # ------------------------------------------------------------------ endpoints

    def health(self, timeout: float = 5.0) -> bool:
        """True when `GET /health` answers 200."""
        try:
            conn, resp, deadline = self._request("GET", "/health", timeout=timeout)
        except (Transient, Cut):
            return False
        try:
            self._read_body(resp, deadline, "GET /health")
            return resp.status == 200
        except ServerError:
            return False
        finally:
            deadline.cancel()
            conn.close()

    def version(self) -> str | None:
        """The engine version from `GET /version`, or None when the server has no such endpoint."""
        try:
            obj = self._json("GET", "/version", timeout=30)
        except Rejected:
            return None
        v = obj.get("version") if isinstance(obj, dict) else None
        return v if isinstance(v, str) else None

    def server_info(self) -> dict[str, Any] | None:
        """What `GET /server_info?config_format=json` says of the model config, when the server runs with
        VLLM_SERVER_DEV_MODE=1 (`vllm/entrypoints/serve/dev/server_info/api_router.py`); else None."""
        try:
            obj = self._json("GET", "/server_info?config_format=json", timeout=60)
        except ServerError:
            return None
        mc = obj.get("vllm_config", {}).get("model_config") if isinstance(obj, dict) else None
        if not isinstance(mc, dict):
            return None
        keep = ("model", "served_model_name", "max_model_len", "dtype", "seed", "generation_config",
                "override_generation_config", "revision", "tokenizer")
        return {k: mc[k] for k in keep if k in mc}

    def models(self) -> list[dict[str, Any]]:
        """The model cards of `GET /v1/models`."""
        obj = self._json("GET", "/v1/models", timeout=30)
        data = obj.get("data") if isinstance(obj, dict) else None
        if not isinstance(data, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in data):
            raise Malformed("GET /v1/models: expected {\"data\": [{\"id\": ...}, ...]}")
        return data

    def tokenize(self, model: str, *, prompt: str | None = None,
                 messages: list[dict[str, str]] | None = None) -> tuple[int, int | None]:
        """(token count, the server's max_model_len) of a completion prompt or of chat messages
        rendered with the server's chat template and generation prompt."""
        body: dict[str, Any] = {"model": model}
        if messages is not None:
            body.update(messages=messages, add_generation_prompt=True, add_special_tokens=False)
        else:
            body.update(prompt=prompt, add_special_tokens=True)
        obj = self._json("POST", "/tokenize", body, timeout=120)
        count = obj.get("count") if isinstance(obj, dict) else None
        tokens = obj.get("tokens") if isinstance(obj, dict) else None
        if not isinstance(count, int) or isinstance(count, bool):
            raise Malformed("POST /tokenize: reply has no integer `count`")
        if isinstance(tokens, list) and len(tokens) != count:
            raise Malformed(f"POST /tokenize: `count` {count} differs from {len(tokens)} `tokens`")
        mml = obj.get("max_model_len")
        return count, mml if isinstance(mml, int) and not isinstance(mml, bool) else None

    def stream(self, path: str, body: dict[str, Any], *, request_id: str | None = None,
               progress: TokenProgress | None = None) -> Iterator[dict[str, Any]]:
        """The JSON events of a streamed request, ending at `data: [DONE]`; with `progress`, cut (NoProgress) when
        its deadline passes, checked at every line (a comment line too).

        Raises Transient when the stream stops before `[DONE]`, Malformed on an event that is not JSON.
        """
        headers = {"Accept": "text/event-stream"}
        if request_id:
            headers["X-Request-Id"] = request_id
        conn, resp, deadline = self._request("POST", path, body, headers=headers)
        what = f"POST {path}"
        try:
            if resp.status != 200:
                try:
                    raw = self._read_body(resp, deadline, what)
                except ServerError:
                    raw = b""
                err = Transient if resp.status >= 500 else Rejected
                raise err(f"{what}: {_error_message(resp.status, raw)}")
            total = 0
            while True:
                try:
                    line = resp.readline(self.max_line_bytes + 1)
                except _CONNECTION_ERRORS as e:
                    deadline.check(what)
                    raise Transient(f"{what}: stream cut off: {type(e).__name__}: {e}") from None
                deadline.check(what)  # (a socket shut by the watchdog reads as the end of the stream)
                if progress is not None:
                    progress.check(what)
                if not line:
                    raise Transient(f"{what}: stream ended before data: [DONE]")
                total += len(line)
                if len(line) > self.max_line_bytes:
                    raise Cut(f"cut: {what}: a stream line is over the {self.max_line_bytes:,}-byte limit")
                if total > self.max_reply_bytes:
                    raise Cut(f"cut: {what}: the stream is over the {self.max_reply_bytes:,}-byte limit")
                line = line.strip()
                if not line or line.startswith(b":"):
                    continue
                if not line.startswith(b"data:"):
                    continue  # other SSE fields (event:, id:) carry nothing we use
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    return
                try:
                    event = json.loads(payload)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    shown = payload[:120].decode("utf-8", "replace")
                    raise Malformed(f"{what}: stream event is not JSON: {shown!r}") from None
                if not isinstance(event, dict):
                    raise Malformed(f"{what}: stream event is not a JSON object")
                yield event
        finally:
            deadline.cancel()
            conn.close()

    def read_stream(self, path: str, body: dict[str, Any], *, chat: bool, request_id: str | None = None,
                    progress_s: float | None = None) -> StreamReply:
        """Send one streamed generation request and read its events: the one reader of generated text, for
        `generate` and the judge's calls alike. Bounds, whatever the server does: `stream`'s (the request deadline,
        bytes per line and in all), a progress deadline (`TokenProgress`, `progress_s`, by default `timeout`: only
        a chunk of text moves it), and more chunks of text than `max_tokens` (each carries at least one token).
        An error event, a choice other than 0 or a mistyped text is an error; usage is kept as sent.

        Durations come from the monotonic clock; `started_at`/`finished_at` are wall-clock stamps.
        """
        started = time.time()
        t0 = time.monotonic()
        out = StreamReply(started_at=started)
        pieces: list[str] = []
        reasoning: list[str] = []
        finish: Any = None
        # Each chunk of text carries at least one token: more chunks than max_tokens is a stream
        # that does not stop (or a server ignoring its budget); cut it there.
        budget = body.get("max_completion_tokens", body.get("max_tokens"))
        stall = self.timeout if progress_s is None else progress_s
        # (a progress deadline no shorter than the request's own adds nothing: the request deadline speaks first)
        progress = TokenProgress(stall) if self.deadline is None or stall < self.deadline else None
        for event in self.stream(path, body, request_id=request_id, progress=progress):
            out.events += 1
            if "error" in event:
                err = event["error"]
                code = err.get("code") if isinstance(err, dict) else None
                cls = Transient if isinstance(code, int) and code >= 500 else Rejected
                raise cls(f"POST {path}: error in stream: {error_event_text(event)[:200]}")
            out.response_id = event.get("id", out.response_id)
            if isinstance(event.get("model"), str):
                out.model = event["model"]
            choices = event.get("choices")
            if not isinstance(choices, list):
                raise Malformed(f"POST {path}: stream event without a `choices` list")
            for choice in choices:
                piece, think = _choice_text(path, choice, chat)
                has_text = False
                for value, sink in ((piece, pieces), (think, reasoning)):
                    if value is None:
                        continue
                    if not isinstance(value, str):
                        raise Malformed(f"POST {path}: generated text is {type(value).__name__}, not a string")
                    if value and out.first_token_s is None:
                        out.first_token_s = time.monotonic() - t0
                    has_text = has_text or bool(value)
                    sink.append(value)
                if has_text:
                    out.texts += 1
                    if progress is not None:
                        progress.advance()
                if isinstance(budget, int) and out.texts > budget:
                    raise Cut(f"cut: POST {path}: the stream carried more than {budget} chunks of text, "
                              f"over max_tokens {budget}")
                lp = choice.get("logprobs")
                if isinstance(lp, dict) and isinstance(lp.get("content"), list):
                    out.logprobs.extend(x for x in lp["content"] if isinstance(x, dict))
                if choice.get("finish_reason") is not None:
                    finish = choice["finish_reason"]
                    out.stop_reason = choice.get("stop_reason")
            if event.get("usage") is not None:
                out.usage = event["usage"]
        out.finished_at = started + (time.monotonic() - t0)
        if finish is None:
            raise Malformed(f"POST {path}: the stream reached [DONE] without a finish_reason")
        if not isinstance(finish, str):
            raise Malformed(f"POST {path}: finish_reason is {finish!r}, not a string")
        out.finish_reason = finish
        out.text = "".join(pieces)
        out.reasoning = "".join(reasoning) if reasoning else None
        return out

    def generate(self, path: str, body: dict[str, Any], *, chat: bool,
                 request_id: str | None = None) -> StreamResult:
        """`read_stream`, with the usage the request asked for (`stream_options.include_usage`) required and
        checked: counts of tokens, and no fewer completion tokens than the chunks of text."""
        r = self.read_stream(path, body, chat=chat, request_id=request_id)
        if not isinstance(r.usage, dict):
            raise Malformed(f"POST {path}: the stream carried no usage (stream_options.include_usage was sent)")
        pt = _usage_count(path, r.usage, "prompt_tokens")
        ct = _usage_count(path, r.usage, "completion_tokens")
        if ct < r.texts:
            raise Malformed(f"POST {path}: usage.completion_tokens is {ct}, fewer than the {r.texts} chunks of text "
                            "the stream carried")
        return StreamResult(**vars(r), prompt_tokens=pt, completion_tokens=ct)

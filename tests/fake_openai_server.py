"""TEST DOUBLE: a small fake of vLLM's OpenAI-compatible server, for tests without a GPU.

It speaks the parts of the protocol `audit generate` uses, shaped like vLLM v0.26.0:
`GET /health`, `GET /version`, `GET /v1/models` (with `max_model_len`), `POST /tokenize`
(prompt or chat messages), and `POST /v1/completions` / `POST /v1/chat/completions`,
streamed (chunked SSE, a final usage chunk when `stream_options.include_usage`,
then `data: [DONE]`) or not. Its "model" emits words from a fixed list, chosen by a
generator seeded from the request's seed and prompt, and ends each step with an
end-of-sequence token with probability `stop_prob`. Prompts are "tokenized" by a
regex (special `<|...|>` tokens count one each) behind a ChatML template, like the
tiny Llama of shared/device/make-tiny-llama.py.

It validates budgets like vLLM (prompt + max_tokens > max_model_len is a 400) and,
with a log file (or stdout when run as a program), writes vLLM's
`Received request {id}: params: SamplingParams(...)` line for every request.

Faults for tests (`faults`: dicts consumed in order, each `{"kind", "match", "times"}`,
`match` a substring of the prompt, `once_file` a path that, once created by the
fault, disarms it across restarts): `500`, `drop` (close without a reply),
`truncate` (cut the stream before `[DONE]`), `badjson` (an event that is not JSON),
`no_usage`, `error_event` (a 500 error inside the stream), `die` (the process exits),
`stall` (the stream pauses `seconds` after `after` chunks, then goes on).
Hostile streams (each ends after `seconds`, default 30, or when the client hangs up): `endless`
(text chunks without end), `endless_empty` (chunks with empty text), `drip` (a valid stream sent one
byte every `interval` seconds), `huge_line` (one `data:` line of `bytes` bytes), `lying_usage` (usage
says `completion_tokens` whatever was sent); `at_budget` (a reply using all of max_tokens says `stop`).

For `audit bench`: `stream_options.continuous_usage_stats` puts a cumulative `usage` on
every chunk, as vLLM v0.26.0 does (the end-of-sequence token then comes as a last chunk
with empty text, counted in usage); `ignore_eos` is honoured; `bundle` (a list of token
counts, cycled) makes chunks carry several tokens, as speculative decoding does, and
`spec_k` reports drafts of that many tokens (accepted: the bundle size minus one) in
`GET /metrics`, beside `vllm:generation_tokens_total` and `vllm:prompt_tokens_total`
(Prometheus text, `_total` counters with `model_name` and `engine` labels; `metrics=False`
answers 404); `first_token_delay` delays the first chunk; `no_chunk_usage` ignores
`continuous_usage_stats`; `empty_first_chunk` sends a chunk with no token (empty text, usage
unchanged) before the first-token delay, as a server that flushes early might.
`dev_mode` answers `GET /server_info` like VLLM_SERVER_DEV_MODE=1.
Misbehaviours: `apply` (sampling values the server uses whatever was sent),
`max_tokens_cap` (a server-wide ceiling), `prompt_tokens_delta` (usage off by N).

Run as a program (for `--launch` and kill tests):
    python tests/fake_openai_server.py --model M --port P [--max-model-len N] [--fake-config JSON]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOKEN = re.compile(r"<\|[^|>]+\|>|\w+|[^\w\s]")
WORDS = ["the", "answer", "is", "(", "B", ")", "so", "x", "=", "4", "\\boxed{4}", "we", "have", "then",
         "Answer", ":", "C", "step", "by", "therefore", "2", "+", "7", "and"]
BOS, IM_START, IM_END = "<|begin_of_text|>", "<|im_start|>", "<|im_end|>"
PARAM_ORDER = ("n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature", "top_p", "top_k",
               "min_p", "seed", "stop", "stop_token_ids", "bad_words", "thinking_token_budget",
               "include_stop_str_in_output", "ignore_eos", "max_tokens", "min_tokens", "logprobs",
               "prompt_logprobs", "skip_special_tokens", "spaces_between_special_tokens", "structured_outputs",
               "extra_args")


def count_tokens(text: str) -> int:
    return len(TOKEN.findall(text))


def chat_template(messages: list[dict[str, Any]], add_generation_prompt: bool = True) -> str:
    out = BOS + "".join(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages)
    return out + (f"{IM_START}assistant\n" if add_generation_prompt else "")


def prompt_tokens(body: dict[str, Any], chat: bool) -> tuple[str, int]:
    """The text the model reads for a request and its token count: a BOS where the request adds special
    tokens (by default only for plain completions: the chat template carries its own)."""
    text = (chat_template(body["messages"], body.get("add_generation_prompt", True)) if chat
            else body.get("prompt") or "")
    return text, count_tokens(text) + (1 if body.get("add_special_tokens", not chat) else 0)


@dataclass(kw_only=True, eq=False)
class FakeState:
    """Configuration and counters shared by the handler threads."""

    model: str = "fake-model"
    root: str | None = None
    max_model_len: int = 512
    version: str = "0.26.0-fake"
    token_delay: float = 0.0
    stop_prob: float = 0.05
    log_path: str | None = None
    faults: list[dict[str, Any]] | None = None
    apply: dict[str, Any] | None = None
    max_tokens_cap: int | None = None
    prompt_tokens_delta: int = 0
    defaults: dict[str, Any] | None = None
    log_stdout: bool = False
    log_requests: bool = True
    dev_mode: bool = False
    bundle: list[int] | None = None
    spec_k: int | None = None
    metrics: bool = True
    first_token_delay: float = 0.0
    no_chunk_usage: bool = False
    empty_first_chunk: bool = False
    # Misbehaving modes for `audit bench` (issue 19): a first chunk claiming `claim_tokens` completion
    # tokens; an endless stream (chunks without tokens, forever); /metrics serving `metrics_text`
    # verbatim; /tokenize answering `tokenize_count` whatever the text.
    claim_tokens: int | None = None
    endless: bool = False
    endless_comments: bool = False
    metrics_text: str | None = None
    tokenize_count: int | None = None

    def __post_init__(self) -> None:
        self.root = self.root or self.model
        # own copies: a fault's `times` counts down in place
        self.faults = list(self.faults or [])
        self.apply = dict(self.apply or {})
        self.defaults = dict(self.defaults or {})
        self.bundle = list(self.bundle or [1])
        self.counters = {"generation": 0, "prompt": 0, "drafts": 0, "draft_tokens": 0, "accepted": 0}
        self.lock = threading.Lock()
        self.generate_requests: list[dict[str, Any]] = []
        self.tokenize_requests = 0
        if self.defaults:
            self.log("WARNING [model.py:1546] Default vLLM sampling parameters have been overridden by the model's "
                     f"`generation_config.json`: `{self.defaults!r}`. If this is not intended, please relaunch vLLM "
                     "instance with `--generation-config vllm`.")

    def log(self, msg: str) -> None:
        line = f"(APIServer pid={os.getpid()}) {time.strftime('%m-%d %H:%M:%S')} {msg}\n"
        if self.log_stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
        if self.log_path:
            with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
                f.write(line)

    def take_fault(self, text: str, endpoint: str) -> str | None:
        f = self.take_fault_spec(text, endpoint)
        return f["kind"] if f else None

    def take_fault_spec(self, text: str, endpoint: str) -> dict[str, Any] | None:
        with self.lock:
            for f in self.faults:
                if f.get("times", 1) <= 0:
                    continue
                if f.get("endpoint", "generate") != endpoint:
                    continue
                if f.get("match") and f["match"] not in text:
                    continue
                once = f.get("once_file")
                if once:
                    if os.path.exists(once):
                        continue
                    Path(once).write_text("fired\n")
                f["times"] = f.get("times", 1) - 1
                return f
        return None


def _applied_params(body: dict[str, Any], max_tokens: int, state: FakeState) -> dict[str, Any]:
    """SamplingParams as vLLM v0.26.0 would build them: request value, else default; greedy resets."""
    def pick(key: str, neutral: Any) -> Any:
        v = body.get(key)
        return state.defaults.get(key, neutral) if v is None else v

    p = {"n": body.get("n") or 1, "presence_penalty": body.get("presence_penalty") or 0.0,
         "frequency_penalty": body.get("frequency_penalty") or 0.0,
         "repetition_penalty": pick("repetition_penalty", 1.0), "temperature": pick("temperature", 1.0),
         "top_p": pick("top_p", 1.0), "top_k": pick("top_k", 0), "min_p": pick("min_p", 0.0),
         "seed": body.get("seed"), "stop": body.get("stop") or [], "stop_token_ids": [], "bad_words": [],
         "thinking_token_budget": None, "include_stop_str_in_output": False,
         "ignore_eos": bool(body.get("ignore_eos", False)),
         "max_tokens": max_tokens, "min_tokens": body.get("min_tokens") or 0, "logprobs": None,
         "prompt_logprobs": None, "skip_special_tokens": True, "spaces_between_special_tokens": True,
         "structured_outputs": None, "extra_args": None}
    if isinstance(p["stop"], str):
        p["stop"] = [p["stop"]]
    for k in ("temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty"):
        p[k] = float(p[k])
    if p["temperature"] < 1e-5:
        p.update(top_p=1.0, top_k=0, min_p=0.0)
    p.update(state.apply)
    return p


def _repr_params(p: dict[str, Any]) -> str:
    return "SamplingParams(" + ", ".join(f"{k}={p[k]!r}" for k in PARAM_ORDER) + ")"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: FakeState

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - BaseHTTPRequestHandler's name
        pass

    # ------------------------------------------------------------------ replies

    def _head(self, status: int, headers: dict[str, str]) -> None:
        """Status line and `headers`, then `Connection: close`: every reply is the connection's last."""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _send(self, status: int, content_type: str | None, data: bytes) -> None:
        self._head(status, ({"Content-Type": content_type} if content_type else {}) |
                   {"Content-Length": str(len(data))})
        self.wfile.write(data)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, "application/json", json.dumps(obj).encode())

    def _error(self, status: int, message: str, err_type: str = "BadRequestError") -> None:
        self._json(status, {"error": {"message": message, "type": err_type, "param": None, "code": status}})

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, obj: Any) -> None:
        self._chunk(b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n")

    def _close_stream(self, final: dict[str, Any] | None = None) -> None:
        """The usage event `final` (when given), then the end marker and the closing empty chunk."""
        if final is not None:
            self._event(final)
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    # ------------------------------------------------------------------ routes

    def do_GET(self) -> None:  # noqa: N802
        st = self.state
        if self.path == "/health":
            self._send(200, None, b"")
        elif self.path == "/version":
            self._json(200, {"version": st.version})
        elif self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [
                {"id": st.model, "object": "model", "created": 0, "owned_by": "vllm", "root": st.root,
                 "parent": None, "max_model_len": st.max_model_len, "permission": []}]})
        elif self.path == "/metrics" and st.metrics:
            self._metrics()
        elif self.path.startswith("/server_info") and st.dev_mode:
            self._json(200, {"vllm_config": {"model_config": {
                "model": st.root, "served_model_name": st.model, "max_model_len": st.max_model_len, "seed": 0,
                "dtype": "bfloat16", "generation_config": "auto", "override_generation_config": {}}},
                "vllm_env": {}, "system_env": {}})
        else:
            self._error(404, f"no route {self.path}", "NotFoundError")

    def _metrics(self) -> None:
        st = self.state
        labels = f'{{engine="0",model_name="{st.model}"}}'
        with st.lock:
            c = dict(st.counters)
        lines = ["# HELP vllm:generation_tokens_total Number of generation tokens processed.",
                 "# TYPE vllm:generation_tokens_total counter",
                 f"vllm:generation_tokens_total{labels} {float(c['generation'])}",
                 "# TYPE vllm:prompt_tokens_total counter", f"vllm:prompt_tokens_total{labels} {float(c['prompt'])}",
                 "# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{labels} 0.0"]
        if st.spec_k:
            lines += ["# TYPE vllm:spec_decode_num_drafts_total counter",
                      f"vllm:spec_decode_num_drafts_total{labels} {float(c['drafts'])}",
                      f"vllm:spec_decode_num_draft_tokens_total{labels} {float(c['draft_tokens'])}",
                      f"vllm:spec_decode_num_accepted_tokens_total{labels} {float(c['accepted'])}",
                      f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="{st.model}",'
                      f'position="0"}} {float(c["accepted"])}']
        data = ("\n".join(lines) + "\n").encode()
        if st.metrics_text is not None:
            data = st.metrics_text.encode()
        self._send(200, "text/plain; version=0.0.4", data)

    def do_POST(self) -> None:  # noqa: N802
        st = self.state
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            return self._error(400, "body is not JSON")
        if self.path == "/tokenize":
            return self._tokenize(body)
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            return self._error(404, f"no route {self.path}", "NotFoundError")
        chat = self.path == "/v1/chat/completions"
        if body.get("model") not in (st.model, None):
            return self._error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        text, n_prompt = prompt_tokens(body, chat)
        plain = body["messages"][-1]["content"] if chat else text
        asked = body.get("max_completion_tokens", body.get("max_tokens")) if chat else body.get("max_tokens", 16)
        with st.lock:
            st.generate_requests.append(body)
        fault_spec = st.take_fault_spec(plain, "generate")
        fault = fault_spec["kind"] if fault_spec else None
        if fault == "die":
            if st.log_stdout:  # running as its own process: exit like a crashed server
                st.log("ERROR [core.py:1] EngineCore died unexpectedly (injected)")
                os._exit(3)
            threading.Thread(target=lambda: (self.server.shutdown(), self.server.server_close()), daemon=True).start()
            return self._drop()
        if fault == "500":
            return self._error(500, "injected server error", "InternalServerError")
        if fault == "drop":
            return self._drop()
        room = st.max_model_len - n_prompt
        if asked is not None and asked > room:
            return self._error(400, f"This model's maximum context length is {st.max_model_len} tokens. However, "
                                    f"you requested {asked} output tokens and your prompt contains {n_prompt} input "
                                    f"tokens, for a total of {asked + n_prompt} tokens.")
        max_tokens = room if asked is None else asked
        if st.max_tokens_cap is not None:
            max_tokens = min(max_tokens, st.max_tokens_cap)
        params = _applied_params(body, max_tokens, st)
        xid = self.headers.get("X-Request-Id") or f"{random.getrandbits(64):016x}"
        rid = f"chatcmpl-{xid}" if chat else f"cmpl-{xid}-0"
        if st.log_requests:
            st.log(f"INFO [request_logger.py:65] Received request {rid}: params: {_repr_params(params)}, "
                   "lora_request: None.")
        pieces, finish, stop_reason, n_out = self._sample(text, params)
        if fault == "at_budget" and n_out == params["max_tokens"]:
            finish = "stop"  # as vLLM may say when the end-of-sequence token is the budget's last
        usage = {"prompt_tokens": n_prompt + st.prompt_tokens_delta, "total_tokens": n_prompt + n_out,
                 "completion_tokens": n_out}
        if not body.get("stream"):
            full = "".join(pieces)
            choice = ({"index": 0, "message": {"role": "assistant", "content": full}, "finish_reason": finish,
                       "stop_reason": stop_reason} if chat else
                      {"index": 0, "text": full, "finish_reason": finish, "stop_reason": stop_reason})
            return self._json(200, {"id": rid, "object": "chat.completion" if chat else "text_completion",
                                    "created": int(time.time()), "model": st.model, "choices": [choice],
                                    "usage": usage})
        with st.lock:
            st.counters["prompt"] += n_prompt
        self._stream(rid, chat, pieces, finish, stop_reason, usage, body, fault, fault_spec or {})

    def _tokenize(self, body: dict[str, Any]) -> None:
        st = self.state
        with st.lock:
            st.tokenize_requests += 1
        fault = st.take_fault(json.dumps(body), "tokenize")
        if fault == "500":
            return self._error(500, "injected tokenize error", "InternalServerError")
        _text, n = prompt_tokens(body, "messages" in body)
        if st.tokenize_count is not None:
            return self._json(200, {"count": st.tokenize_count, "max_model_len": st.max_model_len})
        self._json(200, {"count": n, "max_model_len": st.max_model_len, "tokens": list(range(n)),
                         "token_strs": None})

    def _sample(self, prompt: str, p: dict[str, Any]) -> tuple[list[str], str, Any, int]:
        st = self.state
        if p["temperature"] < 1e-5:
            rng = random.Random(prompt)
        elif p["seed"] is None:
            rng = random.Random()
        else:
            rng = random.Random(f"{p['seed']}|{p['temperature']}|{prompt}")
        pieces: list[str] = []
        text = ""
        n = 0
        while n < p["max_tokens"]:
            if n >= p["min_tokens"] and not p["ignore_eos"] and rng.random() < st.stop_prob:
                return pieces, "stop", None, n + 1  # the end-of-sequence token counts, its text does not
            word = rng.choice(WORDS)
            piece = word if not pieces else " " + word
            n += 1
            for s in p["stop"]:
                if (text + piece).endswith(s):
                    cut = (text + piece)[: -len(s)]
                    pieces.append(cut[len(text):])
                    return pieces, "stop", s, n
            pieces.append(piece)
            text += piece
        return pieces, "length", None, n

    def _stream(self, rid: str, chat: bool, pieces: list[str], finish: str, stop_reason: Any,
                usage: dict[str, Any], body: dict[str, Any], fault: str | None, fault_spec: dict[str, Any]) -> None:
        st = self.state
        self._head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(piece: str | None, fin: str | None = None) -> dict[str, Any]:
            if chat:
                delta = {} if piece is None else {"content": piece}
                c = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": fin}
            else:
                c = {"index": 0, "text": piece or "", "logprobs": None, "finish_reason": fin}
            if fin is not None:
                c["stop_reason"] = stop_reason
            return {"id": rid, "object": obj, "created": created, "model": st.model, "choices": [c]}

        if fault in ("endless", "endless_empty", "drip", "huge_line"):
            return self._stream_hostile(fault, fault_spec, chunk)
        if fault == "lying_usage":
            usage = {**usage, "completion_tokens": fault_spec.get("completion_tokens", 1)}
        opts = body.get("stream_options") or {}
        if opts.get("include_usage") and opts.get("continuous_usage_stats") and not st.no_chunk_usage:
            return self._stream_counted(rid, chat, pieces, finish, stop_reason, usage, obj, created, chunk,
                                        fault, fault_spec)
        try:
            if chat:
                self._event({"id": rid, "object": obj, "created": created, "model": st.model, "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                     "finish_reason": None}]})
            for i, piece in enumerate(pieces):
                if st.token_delay:
                    time.sleep(st.token_delay)
                if fault == "truncate" and i >= len(pieces) // 2:
                    return self._drop()
                if fault == "badjson" and i == 1:
                    self._event(b'{"id": "broken", "choices": [')
                if fault == "error_event" and i == 1:
                    self._event({"error": {"message": "injected engine error", "type": "InternalServerError",
                                           "param": None, "code": 500}})
                    return self._close_stream()
                last = i == len(pieces) - 1
                self._event(chunk(piece, finish if last else None))
            if not pieces:
                if fault == "truncate":
                    return self._drop()
                self._event(chunk(None if chat else "", finish))
            opts = body.get("stream_options") or {}
            self._close_stream({"id": rid, "object": obj, "created": created, "model": st.model, "choices": [],
                                "usage": usage} if opts.get("include_usage") and fault != "no_usage" else None)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _stream_hostile(self, fault: str, spec: dict[str, Any], chunk: Any) -> None:
        """A stream that never ends by itself (bounded here by `seconds`, so a test cannot hang)."""
        end = time.monotonic() + spec.get("seconds", 30)
        try:
            if fault == "huge_line":
                left = spec.get("bytes", 64 << 20)
                self._chunk(b'data: {"choices": [{"index": 0, "text": "')
                while left > 0 and time.monotonic() < end:
                    n = min(left, 1 << 20)
                    self._chunk(b"x" * n)
                    left -= n
                self._chunk(b'"}]}\n\n')
            elif fault == "drip":
                event = b"data: " + json.dumps(chunk("x")).encode() + b"\n\n"
                i = 0
                while time.monotonic() < end:
                    self._chunk(event[i % len(event):i % len(event) + 1])
                    i += 1
                    time.sleep(spec.get("interval", 0.2))
            else:
                while time.monotonic() < end:
                    self._event(chunk("" if fault == "endless_empty" else " x"))
            self._close_stream()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def _stream_counted(self, rid: str, chat: bool, pieces: list[str], finish: str, stop_reason: Any,
                        usage: dict[str, Any], obj: str, created: int, chunk: Any, fault: str | None,
                        fault_spec: dict[str, Any]) -> None:
        """Streaming with a cumulative usage on every chunk (vLLM's continuous_usage_stats)."""
        st = self.state
        groups: list[list[str]] = []
        i = b = 0
        while i < len(pieces):
            size = max(1, st.bundle[b % len(st.bundle)])
            groups.append(pieces[i:i + size])
            i += size
            b += 1
        eos = finish == "stop" and stop_reason is None  # the end-of-sequence token: counted, no text
        n_prompt = usage["prompt_tokens"]
        done = 0

        def counted(piece: str | None, completion: int, fin: str | None = None) -> None:
            c = chunk(piece, fin)
            c["usage"] = {"prompt_tokens": n_prompt, "completion_tokens": completion,
                          "total_tokens": n_prompt + completion}
            self._event(c)

        try:
            if st.claim_tokens is not None:
                counted("x", st.claim_tokens)
            while st.endless:  # chunks that carry no token, until the client goes away
                counted("", 0)
                time.sleep(0.002)
            while st.endless_comments:  # SSE comment lines, until the client goes away
                self._chunk(b": keep-alive\n\n")
                time.sleep(0.002)
            if st.empty_first_chunk:
                counted(None if chat else "", 0)
            if st.first_token_delay:
                time.sleep(st.first_token_delay)
            for gi, group in enumerate(groups):
                if st.token_delay:
                    time.sleep(st.token_delay * len(group))
                if fault == "stall" and gi == fault_spec.get("after", 1):
                    time.sleep(float(fault_spec.get("seconds", 1.0)))
                if fault == "truncate" and gi >= len(groups) // 2:
                    return self._drop()
                done += len(group)
                with st.lock:
                    st.counters["generation"] += len(group)
                    if st.spec_k and gi > 0:
                        st.counters["drafts"] += 1
                        st.counters["draft_tokens"] += st.spec_k
                        st.counters["accepted"] += len(group) - 1
                last = gi == len(groups) - 1 and not eos
                counted("".join(group), done, finish if last else None)
            if eos or not groups:
                done += 1 if eos else 0
                counted(None if chat else "", done, finish)
            self._close_stream({"id": rid, "object": obj, "created": created, "model": st.model, "choices": [],
                                "usage": usage} if fault != "no_usage" else None)
        except (BrokenPipeError, ConnectionResetError):
            pass


class FakeOpenAIServer:
    """In-process fake server on a free port; use as a context manager. `.state` holds config and counters."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **config: Any):
        self.state = FakeState(**config)
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        self._thread: threading.Thread | None = None

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="TEST DOUBLE of vLLM's OpenAI server")
    ap.add_argument("--model", required=True)
    ap.add_argument("--served-model-name")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--max-model-len", type=int, default=512)
    ap.add_argument("--enable-log-requests", action="store_true")
    ap.add_argument("--fake-config", default="{}", help="JSON object of FakeState options")
    ap.add_argument("--startup-delay", type=float, default=0.0)
    args, _unknown = ap.parse_known_args(argv)
    extra = json.loads(args.fake_config)
    defaults = extra.pop("defaults", None)
    pad_log = extra.pop("pad_log_bytes", 0)  # at shutdown: the log (stdout) grown by this many NUL bytes, sparse
    gen = Path(args.model) / "generation_config.json"
    if defaults is None and gen.is_file():
        cfg = json.loads(gen.read_text())
        defaults = {k: cfg[k] for k in ("repetition_penalty", "temperature", "top_k", "top_p", "min_p")
                    if cfg.get(k) is not None}
    print(f"(APIServer pid={os.getpid()}) INFO fake vLLM API server version {extra.get('version', '0.26.0-fake')}",
          flush=True)
    if args.startup_delay:
        time.sleep(args.startup_delay)
    srv = FakeOpenAIServer(host=args.host, port=args.port, model=args.served_model_name or args.model,
                           root=args.model, max_model_len=args.max_model_len, log_stdout=True,
                           log_requests=args.enable_log_requests, defaults=defaults, **extra)
    print(f"(APIServer pid={os.getpid()}) INFO Starting vLLM API server on {srv.url}", flush=True)
    try:
        srv.httpd.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        print(f"(APIServer pid={os.getpid()}) INFO Shutting down FastAPI HTTP server.", flush=True)
    finally:
        srv.httpd.server_close()
        if pad_log:
            sys.stdout.flush()
            os.ftruncate(1, os.fstat(1).st_size + pad_log)
    return 0


if __name__ == "__main__":
    sys.exit(main())

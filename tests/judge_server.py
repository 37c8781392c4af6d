"""A local fake judge: an OpenAI-compatible chat server whose behaviour is chosen by the requested model name.

- `fake-judge`: deterministic. An HLE prompt gets the ExtractedAnswer JSON (`correct` yes when the gold answer
  appears in the response), an inspect prompt `GRADE: C`/`GRADE: I` on the same test, the equality checker
  `Yes`/`No` (expressions equal after stripping spaces).
- `fake-offschema`: prose instead of the schema (`The answer looks right to me.`).
- `fake-truncated`: the JSON cut after 12 characters, `finish_reason` `length`.
- `fake-slow`: drips one character a second (cut by the client's deadline).
- `fake-keepalive`: one chunk of text, then comment lines and empty chunks every 0.1 s for 30 s, never a token
  (cut by the client's progress deadline, well before its request deadline).
- `fake-error`: HTTP 500 on every request.
- `fake-stream-error`: HTTP 200, then one error event with no message (what vLLM 0.26.0 sent when its
  structured-output backend failed to import) and `[DONE]`.
- `fake-flaky`: the deterministic verdict, flipped when `(seed + item hash) % 3 == 0` (a judge that disagrees
  with itself across repeats).

`served_as` makes the stream report another model id (what a proxy behind an alias does).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i)
    return text[i:j if j >= 0 else None].strip()


def verdict_for(prompt: str) -> tuple[str, bool]:
    """(template family, whether the fake judge calls the answer correct) for a rendered prompt."""
    if "[correct_answer]:" in prompt:
        gold = _between(prompt, "[correct_answer]:", "\n")
        response = _between(prompt, "[response]:", "\n\nYour judgement")
        return "hle", bool(gold) and gold in response
    if "[BEGIN DATA]" in prompt:
        sub = _between(prompt, "[Submission]:", "\n***")
        crit = _between(prompt, "[Criterion]:", "\n***") or _between(prompt, "[Expert]:", "\n****")
        return "inspect", bool(crit) and crit.lower() in sub.lower()
    e1 = re.findall(r"Expression 1: (.*)", prompt)[-1] if "Expression 1:" in prompt else ""
    e2 = re.findall(r"Expression 2: (.*)", prompt)[-1] if "Expression 2:" in prompt else ""
    return "equality", e1.replace(" ", "") == e2.replace(" ", "") and bool(e1)


def reply_text(family: str, ok: bool, gold_hint: str = "") -> str:
    if family == "hle":
        return json.dumps({"extracted_final_answer": gold_hint if ok else "None", "reasoning": "fake judge",
                           "correct": "yes" if ok else "no", "confidence": 90 if ok else 40, "strict": True})
    if family == "inspect":
        return f"Compared the two.\n\nGRADE: {'C' if ok else 'I'}"
    return "Yes" if ok else "No"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    served_as: str | None = None

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._json(200, {"data": [{"id": "fake-judge", "root": "fake/judge-rev1"}]})
        elif self.path == "/health":
            self._json(200, {})
        else:
            self._json(404, {"error": {"message": "no such path"}})

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n))
        model = body.get("model", "")
        self.server.requests.append(body)  # type: ignore[attr-defined]
        if model == "fake-error":
            self._json(500, {"error": {"message": "judge overloaded", "code": 500}})
            return
        if model == "fake-stream-error":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b'data: {"error": {"message": "", "type": "BadRequestError", "code": 400}}\n\n'
                             b"data: [DONE]\n\n")
            self.wfile.flush()
            return
        prompt = body["messages"][-1]["content"]
        family, ok = verdict_for(prompt)
        if model == "fake-flaky":
            h = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16)
            if (int(body.get("seed") or 0) + h) % 3 == 0:
                ok = not ok
        gold = _between(prompt, "[correct_answer]:", "\n") if family == "hle" else ""
        text = reply_text(family, ok, gold)
        finish = "stop"
        if model == "fake-offschema":
            text = "The answer looks right to me."
        elif model == "fake-truncated":
            text, finish = text[:12], "length"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        served = self.served_as or model
        want_lp = bool(body.get("logprobs"))
        pieces = [text[i:i + 4] for i in range(0, len(text), 4)] or [""]
        try:
            for piece in pieces:
                choice: dict[str, Any] = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                if want_lp:
                    choice["logprobs"] = {"content": [{"token": piece, "logprob": -0.1,
                                                       "top_logprobs": [{"token": piece, "logprob": -0.1}]}]}
                self.wfile.write(b"data: " + json.dumps({"id": "c1", "model": served, "choices": [choice]}).encode()
                                 + b"\n\n")
                self.wfile.flush()
                if model == "fake-slow":
                    time.sleep(1.0)
                if model == "fake-keepalive":
                    empty = {"id": "c1", "model": served, "choices": [{"index": 0, "delta": {"content": ""}}]}
                    for n in range(300):
                        self.wfile.write(b": keep-alive\n\n" if n % 2 else
                                         b"data: " + json.dumps(empty).encode() + b"\n\n")
                        self.wfile.flush()
                        time.sleep(0.1)
            last = {"id": "c1", "model": served, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
            usage: dict[str, Any] = {"id": "c1", "model": served, "choices": [],
                     "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(pieces)}}
            self.wfile.write(b"data: " + json.dumps(last).encode() + b"\n\n")
            self.wfile.write(b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


class FakeJudge:
    """The server on a free local port, in a thread: `with FakeJudge() as url: ...`."""

    def __init__(self, served_as: str | None = None):
        handler = type("H", (Handler,), {"served_as": served_as})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.requests = []  # type: ignore[attr-defined]
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.httpd.requests  # type: ignore[attr-defined]

    def __enter__(self) -> FakeJudge:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":  # `python tests/judge_server.py PORT`: for scripts/h100_judge.sh's CPU check
    import sys

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.requests = []  # type: ignore[attr-defined]
    srv.serve_forever()

"""One request: the prompt counted by the server, the budget, the streamed reply checked, retries, its row."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from audit.errors import AuditError
from audit.generate.config import RunConfig, Runtime
from audit.generate.openai_http import Cut, Malformed, Rejected, StreamResult, Transient
from audit.generate.plan import RunItems, Task
from audit.generate.servers import Servers, ServerSlot
from audit.models import ResponseRow
from audit.prompts import chat_messages

SENT_KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
             "frequency_penalty", "min_tokens", "stop", "n", "seed")
"""The sent parameters a server log's `SamplingParams(...)` is compared with (and max_tokens)."""


class RefusedRun(AuditError):
    """The server did something other than what the run would record: nothing more is kept."""


class Stopped(Exception):
    """The run is stopping: the request is not sent."""


class TaskFailed(Exception):
    """Counting a prompt's tokens failed on every try; `server_gone` when the server no longer answers."""

    def __init__(self, msg: str, server_gone: bool = False):
        super().__init__(msg)
        self.server_gone = server_gone


@dataclass
class Outcome:
    """What became of a task: a row to keep, a task to send elsewhere (`requeue`), or an error to raise."""

    task: Task
    row: ResponseRow | None = None
    request_id: str | None = None
    """The id of the request that got the reply: its server-log line confirms `sent`."""
    sent: dict[str, Any] | None = None
    """The sampling parameters sent, as the server log shows them."""
    server: int | None = None
    requeue: bool = False
    fatal: BaseException | None = None
    completed_at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class _Request:
    """A task with its budget worked out: what is sent, under which ids."""

    task: Task
    slot: ServerSlot
    prompt_sha256: str
    prompt_tokens: int
    max_tokens: int
    seed: int
    path: str
    body: dict[str, Any]
    rid_base: str
    """The request id but its `-tN` (try) suffix."""


class Requester:
    """Sends tasks to servers and turns each into an Outcome; shared by the worker threads."""

    def __init__(self, cfg: RunConfig, rt: Runtime, run_id: str, items: RunItems, servers: Servers,
                 stop_event: threading.Event):
        self.cfg = cfg
        self.rt = rt
        self.run_id = run_id
        self.items = items
        self.servers = servers
        self.stop_event = stop_event
        self.token_counts: dict[str, int] = {}
        """Prompt tokens by item, as the server's /tokenize counted them (once per item and session)."""
        self._tok_lock = threading.Lock()

    # ------------------------------------------------------------------ the prompt's tokens

    def token_count(self, item_id: str, slot: ServerSlot) -> int:
        """The item's prompt tokens as the server counts them (for chat: with its chat template)."""
        with self._tok_lock:
            if item_id in self.token_counts:
                return self.token_counts[item_id]
        n, mml = self._tokenize(self.items.prompts[item_id][0], slot)
        if mml is not None and mml != self.servers.context_window:
            raise RefusedRun(f"/tokenize reports max_model_len {mml} but /v1/models said "
                             f"{self.servers.context_window}")
        with self._tok_lock:
            self.token_counts[item_id] = n
        return n

    def _tokenize(self, text: str, slot: ServerSlot) -> tuple[int, int | None]:
        last: Exception | None = None
        for attempt in range(self.rt.retries + 1):
            try:
                if self.cfg.mode == "chat":
                    return slot.client.tokenize(self.servers.served_name, messages=chat_messages(text))
                return slot.client.tokenize(self.servers.served_name, prompt=text)
            except Transient as e:
                last = e
                slot.check_alive(e)
                time.sleep(self.rt.backoff_s * 2 ** attempt)
        msg = f"POST /tokenize failed after {self.rt.retries + 1} tries: {last}"
        raise TaskFailed(msg, server_gone=not slot.client.health(timeout=10))

    # ------------------------------------------------------------------ one task

    def request_body(self, item_id: str, max_tokens: int, seed: int) -> tuple[str, dict[str, Any]]:
        """The endpoint and the body of a request: every sampling parameter explicit, streamed with usage."""
        text = self.items.prompts[item_id][0]
        body: dict[str, Any] = {"model": self.servers.served_name}
        if self.cfg.mode == "chat":
            body.update(messages=chat_messages(text), max_completion_tokens=max_tokens,
                        add_generation_prompt=True, add_special_tokens=False)
            path = "/v1/chat/completions"
        else:
            body.update(prompt=text, max_tokens=max_tokens, add_special_tokens=True)
            path = "/v1/completions"
        body.update(self.cfg.sampling.request_fields())
        body.update(seed=seed, stream=True, stream_options={"include_usage": True})
        return path, body

    def run_task(self, task: Task, slot: ServerSlot) -> Outcome:
        """Count the prompt, exclude it if it leaves no room, else send it (with retries) and check the reply."""
        sha = self.items.prompts[task.item_id][1]
        try:
            n_prompt = self.token_count(task.item_id, slot)
        except (Rejected, Malformed, Cut) as e:
            return Outcome(task, row=_row(task, sha, response=None, error=f"counting prompt tokens: {e}"),
                           server=slot.index)
        except TaskFailed as e:
            if e.server_gone:
                return Outcome(task, requeue=True, server=slot.index,
                               fatal=AuditError(f"server {slot.client.url} stopped answering: {e}"))
            return Outcome(task, row=_row(task, sha, response=None, error=str(e)), server=slot.index)
        window = self.servers.context_window
        room = window - n_prompt
        if room < 1:
            row = _row(task, sha, response=None, prompt_tokens=n_prompt,
                       excluded=f"prompt does not fit the context window: {n_prompt} prompt tokens, window {window}",
                       extra={"context_window": window})
            return Outcome(task, row=row, server=slot.index)
        max_tokens = min(task.cap, room)
        seed = self.cfg.seed_for(task.sample, task.attempt)
        path, body = self.request_body(task.item_id, max_tokens, seed)
        rid_base = f"audit-{self.run_id}-{self.servers.index}-{self.items.index[task.item_id]}" \
                   f"-s{task.sample}-a{task.attempt}"
        return self._send(_Request(task, slot, sha, n_prompt, max_tokens, seed, path, body, rid_base))

    def _send(self, req: _Request) -> Outcome:
        task, slot = req.task, req.slot
        last_err: str | None = None
        started = time.time()
        for attempt in range(self.rt.retries + 1):
            if self.stop_event.is_set():
                raise Stopped()
            rid = f"{req.rid_base}-t{attempt}"
            try:
                res = slot.client.generate(req.path, req.body, chat=self.cfg.mode == "chat", request_id=rid)
            except Transient as e:
                last_err = str(e)
                slot.check_alive(e)
                if attempt < self.rt.retries:
                    time.sleep(self.rt.backoff_s * 2 ** attempt * (1 + random.random() / 2))
                continue
            except (Rejected, Malformed, Cut) as e:  # (a cut stream would be cut again: not retried)
                row = _row(task, req.prompt_sha256, response=None, max_tokens=req.max_tokens, seed=req.seed,
                           started_at=started, finished_at=time.time(), error=str(e),
                           extra=self._extra(slot, rid, attempt + 1))
                return Outcome(task, row=row, server=slot.index)
            return self._replied(req, res, rid, attempt + 1)
        # Retries exhausted: a server that stopped answering loses its share; one that answers
        # with errors gets the error recorded on the row.
        if not slot.client.health(timeout=10):
            slot.check_alive(Exception(last_err))
            return Outcome(task, requeue=True, server=slot.index,
                           fatal=AuditError(f"server {slot.client.url} stopped answering: {last_err}"))
        tries = self.rt.retries + 1
        row = _row(task, req.prompt_sha256, response=None, max_tokens=req.max_tokens, seed=req.seed,
                   started_at=started, finished_at=time.time(), error=f"{last_err} (after {tries} tries)",
                   extra=self._extra(slot, req.rid_base + f"-t{self.rt.retries}", tries))
        return Outcome(task, row=row, server=slot.index)

    def _replied(self, req: _Request, res: StreamResult, rid: str, tries: int) -> Outcome:
        """The row of a reply that passed the checks, and what its log line must show."""
        self._check_reply(res, req.prompt_tokens, req.max_tokens, req.task)
        extra = self._extra(req.slot, rid, tries)
        if res.stop_reason is not None:
            extra["stop_reason"] = res.stop_reason
        if res.reasoning is not None:
            extra["reasoning"] = res.reasoning
        # A `stop` at exactly max_tokens is recorded as such: whether the text ended or the budget
        # did cannot be told from the reply, so the row says so and policies decide.
        at_budget = res.finish_reason == "stop" and res.completion_tokens == req.max_tokens
        row = _row(req.task, req.prompt_sha256, response=res.text, finish_reason=res.finish_reason,
                   prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens,
                   max_tokens=req.max_tokens, seed=req.seed, started_at=res.started_at,
                   first_token_s=None if res.first_token_s is None else round(res.first_token_s, 6),
                   finished_at=res.finished_at, at_budget=True if at_budget else None, extra=extra)
        sent = {k: req.body[k] for k in SENT_KEYS}
        sent["max_tokens"] = req.max_tokens
        return Outcome(req.task, row=row, request_id=rid, sent=sent, server=req.slot.index)

    def _extra(self, slot: ServerSlot, rid: str, tries: int) -> dict[str, Any]:
        extra: dict[str, Any] = {"request_id": rid, "session": self.servers.index}
        if len(self.servers.slots) > 1:
            extra["server"] = slot.index
        if tries > 1:
            extra["tries"] = tries
        return extra

    def _check_reply(self, res: StreamResult, n_prompt: int, max_tokens: int, task: Task) -> None:
        where = f"item {task.item_id!r} sample {task.sample} attempt {task.attempt}"
        served = self.servers.served_name
        if res.model is not None and res.model != served:
            raise RefusedRun(f"{where}: the reply names model {res.model!r}, not {served!r}")
        if res.prompt_tokens != n_prompt:
            raise RefusedRun(f"{where}: the server counted {res.prompt_tokens} prompt tokens but /tokenize counted "
                             f"{n_prompt}; the budget would be wrong")
        if res.completion_tokens > max_tokens:
            raise RefusedRun(f"{where}: {res.completion_tokens} completion tokens exceed max_tokens {max_tokens}")
        if res.finish_reason == "length" and res.completion_tokens < max_tokens:
            raise RefusedRun(f"{where}: stopped for length after {res.completion_tokens} tokens but max_tokens was "
                             f"{max_tokens}: the server applied a smaller ceiling (--generation-config PATH or "
                             "--override-generation-config with max_new_tokens?)")


def _row(task: Task, prompt_sha256: str, **fields: Any) -> ResponseRow:
    """A row of this task: its item, sample, attempt and prompt hash, and `fields`."""
    return ResponseRow(item_id=task.item_id, sample=task.sample, attempt=task.attempt, prompt_sha256=prompt_sha256,
                       **fields)

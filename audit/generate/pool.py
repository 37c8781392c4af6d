"""A round of requests on worker threads, and each reply's sampling parameters checked in the server log."""

from __future__ import annotations

import queue
import threading
import time
from typing import IO, Any

from audit.errors import AuditError
from audit.generate.journal import Journal, RowKey, row_key
from audit.generate.plan import Task
from audit.generate.progress import Progress, note
from audit.generate.requests import Outcome, RefusedRun, Requester, Stopped
from audit.generate.servers import Servers
from audit.models import ResponseRow

LOG_WAIT_S = 15.0
"""How long a finished request may wait for its `Received request` log line."""
MUST_BE_LOGGED = ("temperature", "top_p", "top_k", "seed", "max_tokens")
"""Sent parameters whose absence from the log line is a difference (others may be absent in older vLLMs)."""


def compare_applied(oc: Outcome, applied: dict[str, Any]) -> None:
    """Refuse the run unless the server log's `SamplingParams(...)` shows what the request sent."""
    assert oc.sent is not None and oc.row is not None
    diffs = []
    for k, sent in oc.sent.items():
        if k not in applied:
            if k in MUST_BE_LOGGED:
                diffs.append(f"{k} not in the log line")
            continue
        got = applied[k]
        if k == "stop":
            same = list(got or []) == list(sent)
        elif isinstance(sent, float) or isinstance(got, float):
            same = isinstance(got, (int, float)) and float(got) == float(sent)
        else:
            same = got == sent
        if not same:
            diffs.append(f"{k}: sent {sent!r}, applied {got!r}")
    if diffs:
        raise RefusedRun(f"the server applied other sampling parameters than were sent for item "
                         f"{oc.row.item_id!r} sample {oc.row.sample} attempt {oc.row.attempt} "
                         f"(request {oc.request_id}): {'; '.join(diffs)}")


class Round:
    """One round of tasks: workers send them, the calling thread journals each outcome in turn."""

    def __init__(self, requester: Requester, servers: Servers, journal: Journal, done: dict[RowKey, ResponseRow],
                 log: IO[str]):
        self.requester = requester
        self.servers = servers
        self.journal = journal
        self.done = done
        """Rows kept so far, the journal's included: each outcome kept is added."""
        self.log = log
        self.tasks: queue.Queue[Task] = queue.Queue()
        self.results: queue.Queue[Outcome] = queue.Queue()
        self.all_done = threading.Event()
        self.waiting: list[Outcome] = []
        """Replies whose server-log line has not been read yet."""

    def run(self, label: str, tasks: list[Task], progress_enabled: bool, concurrency: int) -> None:
        """Send every task, keeping each row once it is checked; the first fatal error stops the round."""
        for t in tasks:
            self.tasks.put(t)
        remaining = len(tasks)
        progress = Progress(label, len(tasks), enabled=progress_enabled, stream=self.log)
        n_workers = max(1, min(concurrency * len(self.servers.slots), len(tasks)))
        threads = [threading.Thread(target=self._worker, args=(i,), daemon=True, name=f"generate-{i}")
                   for i in range(n_workers)]
        for thread in threads:
            thread.start()
        try:
            while remaining > 0:
                try:
                    oc = self.results.get(timeout=0.2)
                except queue.Empty:
                    oc = None
                if oc is not None:
                    remaining -= self._take(oc, progress)
                if self.waiting:
                    remaining -= self._confirm_waiting(progress)
        finally:
            self.all_done.set()
            if remaining > 0:
                self.requester.stop_event.set()
            progress.close()

    def _worker(self, i: int) -> None:
        stop_event = self.requester.stop_event
        while not stop_event.is_set() and not self.all_done.is_set():
            try:
                task = self.tasks.get(timeout=0.05)
            except queue.Empty:
                continue
            alive = [s for s in self.servers.slots if not s.dead]
            if not alive:
                self.results.put(Outcome(task, fatal=AuditError("no server left to send requests to")))
                return
            slot = alive[i % len(alive)]
            try:
                self.results.put(self.requester.run_task(task, slot))
            except Stopped:
                return
            except BaseException as e:
                self.results.put(Outcome(task, fatal=e))

    def _take(self, oc: Outcome, progress: Progress) -> int:
        """Handle one outcome; the number of rows it kept (0 or 1)."""
        if oc.requeue:
            slot = self.servers.slots[oc.server] if oc.server is not None else None
            if slot is not None and not slot.dead:
                slot.dead = True
                note(self.log, f"{oc.fatal}; its requests go to the other servers")
            if all(s.dead for s in self.servers.slots):
                raise oc.fatal or AuditError("every server stopped answering")
            self.tasks.put(oc.task)
            return 0
        if oc.fatal is not None:
            raise oc.fatal
        if oc.request_id is not None and self.servers.watchers:
            self.waiting.append(oc)
            return 0
        return self._keep(oc, progress)

    def _confirm_waiting(self, progress: Progress) -> int:
        """Keep the waiting replies whose log line has come and matches; the number kept."""
        for w in self.servers.watchers:
            w.poll()
        kept = 0
        still = []
        for oc in self.waiting:
            assert oc.request_id is not None
            rid = oc.request_id
            applied = next((a for w in self.servers.watchers if (a := w.lookup(rid)) is not None), None)
            if applied is not None:
                compare_applied(oc, applied)
                self._count_verified()
                kept += self._keep(oc, progress)
            elif time.monotonic() - oc.completed_at > LOG_WAIT_S:
                raise RefusedRun(
                    f"no 'Received request {oc.request_id}' line in the server log within {LOG_WAIT_S:g} s "
                    "of the reply: cannot confirm the sampling parameters the server applied (is "
                    "--enable-log-requests on and the log level INFO? --no-log-check skips this check)")
            else:
                still.append(oc)
        self.waiting = still
        return kept

    def _count_verified(self) -> None:
        session = self.servers.session
        assert session is not None, "requests are sent only in a session"
        session.requests_verified = (session.requests_verified or 0) + 1

    def _keep(self, oc: Outcome, progress: Progress) -> int:
        assert oc.row is not None
        self.journal.append(oc.row)
        self.done[row_key(oc.row)] = oc.row
        progress.update(oc.row.completion_tokens or 0)
        return 1

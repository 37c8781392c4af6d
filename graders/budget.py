"""Hard per-item time budgets for symbolic grading, in any thread: persistent worker processes.

sympy can hang or explode on adversarial input (`10^{10^{10^{10}}}`, deep nesting,
50 KB expressions), and some of that time is spent in C code that no signal can
interrupt. So symbolic work never runs in the caller's process. It runs in worker
processes started with `subprocess` (not `multiprocessing`, so callers may be
daemonic pool workers themselves), each of which:

1. imports every grader once at start and reports READY (import time is never
   charged to an item);
2. grades one item at a time in its main thread under a soft SIGALRM set to the
   item's budget: the alarm raises `BudgetExceeded` (a BaseException, so sympy's
   broad `except Exception` cannot swallow it) and the worker answers `timeout`;
3. is killed by the parent when an item runs past budget + KILL_GRACE_S (the
   alarm could not interrupt it): a fresh worker replaces only that one.

An item over its budget is not `timeout` yet: when its batch is done it is graded
once more, alone, under RETRY_FACTOR times the budget (the pool's `retry_factor`).
Only an item over that too is `timeout`, with a reason naming both budgets. So a
budget hit caused by load (a full batch, other processes) does not decide a
verdict: the same item gives the same verdict alone and in a batch of hundreds.

The parent talks to workers over pipes (4-byte length + pickle). A pool is
thread-safe: `run_one` checks out one idle worker, `run_many` drives several
with `selectors` from the calling thread. `shared_pool()` is the process-wide
pool that `Grader.grade` and `graders.grade_many` use; it grows on demand up to
the CPU count (at most MAX_DEFAULT_WORKERS, or more when `workers=` asks for
more) and stays alive until the interpreter exits.
"""

from __future__ import annotations

import atexit
import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from audit.graders.judgment import Judgment

RETRY_FACTOR = 4.0
"""An item over its budget is graded once more, alone, under this many times the budget before it is `timeout`."""

KILL_GRACE_S = 1.0
"""Seconds past an item's budget before the parent kills the worker (the soft alarm fires at the budget)."""

WORKER_MEMORY_BYTES = 4 * 1024**3
"""Address-space limit of a worker (RLIMIT_AS): an exploding expression fails with MemoryError, not the host."""

START_TIMEOUT_S = 120.0
"""How long a new worker may take to import the graders before the pool gives up on it."""

MAX_REASON_CHARS = 300
"""Reasons longer than this are cut (they travel over a pipe and end up in JSONL)."""

EXTRA_MODULES_ENV = "AUDIT_GRADER_EXTRA_MODULES"
"""Comma-separated modules a worker imports after the grader families (used by the tests to
register graders that hang or crash inside workers only, never in the caller's registry)."""

_HEADER = struct.Struct("!I")
_IN_WORKER = False


class BudgetExceeded(BaseException):
    """Raised inside a worker by the soft alarm when an item's budget is spent."""


class WorkerStartError(RuntimeError):
    """A worker process could not start (it exited or stayed silent before READY)."""


def in_worker() -> bool:
    """True inside a grading worker process, where graders run inline under the worker's alarm."""
    return _IN_WORKER


@dataclass(frozen=True, slots=True)
class Outcome:
    """A judgment from a worker and the seconds it took (wall clock, as seen by the worker or the parent)."""

    judgment: Judgment
    seconds: float


# --------------------------------------------------------------------------- framing


def _write_msg(fh, obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(_HEADER.pack(len(data)) + data)
    fh.flush()


def _read_exact(fh, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = fh.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _read_msg(fh) -> object | None:
    head = _read_exact(fh, _HEADER.size)
    if head is None:
        return None
    body = _read_exact(fh, _HEADER.unpack(head)[0])
    return None if body is None else pickle.loads(body)


# --------------------------------------------------------------------------- worker side


def _on_alarm(signum, frame) -> None:
    raise BudgetExceeded()


WARM_UP_PAIRS = (("x^2+2x+1", "(x+1)^2"), ("\\frac{1}{2}, 3", "\\{3, 0.5\\}"))
"""Graded once by every isolated grader when a worker starts, so that sympy's lazy imports and
caches are paid before READY, not by the first real item."""


def _warm_up(all_graders: Callable[[], list[Any]]) -> None:
    for g in all_graders():
        if not g.isolated:
            continue
        for answer, reference in WARM_UP_PAIRS:
            try:
                signal.setitimer(signal.ITIMER_REAL, 30.0)
                g.grade_inline(answer, reference)
            except BaseException:
                pass
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)


def worker_main(get: Callable[[str], Any], all_graders: Callable[[], list[Any]]) -> None:
    """Serve grading tasks on stdin/stdout until stdin closes (`python -m audit.graders._worker` calls it
    with the graders' registry: `get(key)` and `all_graders()`)."""
    global _IN_WORKER
    _IN_WORKER = True
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints from libraries go to stderr, never into the protocol
    sys.stdout = sys.stderr
    proto_in = sys.stdin.buffer
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    import importlib

    for mod in filter(None, os.environ.get(EXTRA_MODULES_ENV, "").split(",")):
        importlib.import_module(mod)  # graders registered only inside this pool's workers
    signal.signal(signal.SIGALRM, _on_alarm)
    _warm_up(all_graders)
    _write_msg(proto_out, ("ready", os.getpid()))
    while True:
        msg = _read_msg(proto_in)
        if msg is None:
            return
        t0 = time.perf_counter()
        try:
            if not (isinstance(msg, tuple) and len(msg) == 5):
                raise TypeError("malformed task: expected (key, answer, reference, num_choices, budget_s)")
            key, answer, reference, num_choices, budget_s = msg
            try:
                signal.setitimer(signal.ITIMER_REAL, max(budget_s, 1e-3))
                v = get(key).grade_inline(answer, reference, num_choices=num_choices)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BudgetExceeded:  # raised only by the alarm set after the task was unpacked
            v = Judgment(None, "timeout", f"over the {budget_s:g} s budget (interrupted)")
        except MemoryError:
            v = Judgment(None, "error", f"over the worker memory limit ({WORKER_MEMORY_BYTES // 1024**3} GiB)")
        except Exception as e:  # a worker never dies on one item
            v = Judgment(None, "error", f"{type(e).__name__}: {str(e)[:200]}")
        reason = v.reason if len(v.reason) <= MAX_REASON_CHARS else v.reason[: MAX_REASON_CHARS - 1] + "…"
        _write_msg(proto_out, (v.correct, v.status, reason, time.perf_counter() - t0))


# --------------------------------------------------------------------------- parent side


class _Worker:
    """One worker subprocess as seen by the parent."""

    def __init__(self, extra_modules: Sequence[str] = ()) -> None:
        env = dict(os.environ)
        env[EXTRA_MODULES_ENV] = ",".join(extra_modules)
        paths = [p for p in sys.path if p]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env.setdefault("PYTHONHASHSEED", "0")
        self.proc = subprocess.Popen([sys.executable, "-m", "audit.graders._worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, close_fds=True)
        self.ready = False
        self.started_at = time.monotonic()

    @property
    def stdin(self) -> IO[bytes]:
        """The worker's task pipe (opened with PIPE, so never None)."""
        assert self.proc.stdin is not None
        return self.proc.stdin

    @property
    def stdout(self) -> IO[bytes]:
        """The worker's result pipe (opened with PIPE, so never None)."""
        assert self.proc.stdout is not None
        return self.proc.stdout

    @property
    def out_fd(self) -> int:
        return self.stdout.fileno()

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        if self.ready:
            return
        sel = selectors.DefaultSelector()
        sel.register(self.out_fd, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                self.kill()
                raise WorkerStartError(f"grading worker did not start within {timeout:g} s")
        finally:
            sel.close()
        self.read_ready()

    def read_ready(self) -> None:
        msg = _read_msg(self.stdout)
        if not (isinstance(msg, tuple) and msg and msg[0] == "ready"):
            code = self.proc.poll()
            self.kill()
            raise WorkerStartError(f"grading worker failed to start (exit code {code}); see its stderr")
        self.ready = True

    def send(self, task: tuple) -> None:
        _write_msg(self.stdin, task)

    def read_result(self) -> tuple | None:
        msg = _read_msg(self.stdout)
        return msg if isinstance(msg, tuple) else None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a zombie we cannot reap
            pass
        for fh in (self.stdin, self.stdout):
            try:
                fh.close()
            except OSError:
                pass

    def close(self) -> None:
        """Ask the worker to exit (EOF on its stdin), then make sure it did."""
        try:
            self.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


def _exit_code(w: _Worker) -> int | None:
    """The exit code of a worker whose pipe just closed (it may take a moment to be reaped)."""
    try:
        return w.proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        return None


def _timeout_judgment(budget_s: float, seconds: float) -> Judgment:
    return Judgment(None, "timeout", f"over the {budget_s:g} s budget (worker killed after {seconds:.1f} s)")


def _died_judgment(code: int | None) -> Judgment:
    return Judgment(None, "error", f"grading worker died (exit code {code}) on this item")


MAX_DEFAULT_WORKERS = 8
"""Default pool size is the CPUs available, at most this many (each worker holds ~150 MB of sympy)."""


def default_workers() -> int:
    """The CPUs this process may run on, at most MAX_DEFAULT_WORKERS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DEFAULT_WORKERS))


class WorkerPool:
    """Persistent grading workers; thread-safe checkout. See the module docstring."""

    def __init__(self, max_workers: int | None = None, *, extra_modules: Sequence[str] = (),
                 retry_factor: float | None = RETRY_FACTOR):
        self.max_workers = max_workers or default_workers()
        self.extra_modules = tuple(extra_modules)
        self.retry_factor = retry_factor
        """Budget multiplier of the one retry of an item over its budget; None: no retry (tests of the mechanics)."""
        self.retries = 0
        """Items retried after a budget hit (for tests and benchmarks)."""
        self._idle: list[_Worker] = []
        self._count = 0
        self._cond = threading.Condition()
        self._closed = False
        self.kills = 0
        """Workers killed for overrunning a budget (for tests and benchmarks)."""

    # -- checkout -------------------------------------------------------------------------------

    def _acquire(self, n: int, block: bool = True) -> list[_Worker]:
        """Up to n workers (at least one): idle ones first, new ones while under max_workers."""
        with self._cond:
            if self._closed:
                raise RuntimeError("worker pool is closed")
            while True:
                got: list[_Worker] = []
                while self._idle and len(got) < n:
                    w = self._idle.pop()
                    if w.alive():
                        got.append(w)
                    else:  # died while idle (e.g. the OOM killer): its slot gets a new worker
                        w.kill()
                        self._count -= 1
                new = max(0, min(n - len(got), self.max_workers - self._count))
                self._count += new
                if got or new or not block:
                    break
                self._cond.wait()
        started: list[_Worker] = []
        try:
            for _ in range(new):
                started.append(_Worker(self.extra_modules))
        except BaseException:  # a start failed: give back every slot taken here, or later calls wait forever
            for w in started:
                w.kill()
            with self._cond:
                self._count -= new
            self._release(got)
            raise
        return got + started

    def _release(self, workers: Sequence[_Worker]) -> None:
        with self._cond:
            for w in workers:
                if self._closed or not w.alive():
                    w.kill()
                    self._count -= 1
                else:
                    self._idle.append(w)
            self._cond.notify_all()

    def _replace(self, w: _Worker) -> _Worker:
        """Kill `w` and start a new worker in its slot."""
        w.kill()
        return _Worker(self.extra_modules)

    def warm(self, n: int | None = None) -> None:
        """Start workers now (they import sympy once), so that the first items are not charged for it."""
        ws = self._acquire(n or self.max_workers)
        try:
            for w in ws:
                w.wait_ready()
        finally:
            self._release(ws)

    # -- one item -------------------------------------------------------------------------------

    def run_one(self, key: str, answer: str, reference: str, num_choices: int | None, budget_s: float) -> Outcome:
        """Grade one item in a worker under a hard budget; over it, once more under the retry budget."""
        first = self._run_one_once(key, answer, reference, num_choices, budget_s)
        return self._retried(key, (answer, reference, num_choices), budget_s, first)

    def _retried(self, key: str, task: tuple[str, str, int | None], budget_s: float, first: Outcome) -> Outcome:
        """`first`, or, when it is a budget hit, the outcome of one more try alone under the retry budget."""
        if self.retry_factor is None or first.judgment.status != "timeout":
            return first
        self.retries += 1
        longer = budget_s * self.retry_factor
        again = self._run_one_once(key, *task, longer)
        seconds = first.seconds + again.seconds
        if again.judgment.status == "timeout":  # the reason names both budgets only: no timings, no load in it
            return Outcome(Judgment(None, "timeout", f"over the {budget_s:g} s budget, and over {longer:g} s when "
                                                     f"retried alone"), seconds)
        return Outcome(again.judgment, seconds)

    def _run_one_once(self, key: str, answer: str, reference: str, num_choices: int | None,
                      budget_s: float) -> Outcome:
        """Grade one item in a worker under a hard budget (no retry)."""
        [w] = self._acquire(1)
        outstanding = False  # a task was sent whose result is not read yet
        try:
            w.wait_ready()
            t0 = time.monotonic()
            outstanding = True
            w.send((key, answer, reference, num_choices, budget_s))
            sel = selectors.DefaultSelector()
            sel.register(w.out_fd, selectors.EVENT_READ)
            try:
                ready = sel.select(budget_s + KILL_GRACE_S)
            finally:
                sel.close()
            if not ready:
                elapsed = time.monotonic() - t0
                self.kills += 1
                outstanding = False
                w = self._replace(w)
                return Outcome(_timeout_judgment(budget_s, elapsed), elapsed)
            res = w.read_result()
            outstanding = False
            if res is None:
                code = _exit_code(w)
                w = self._replace(w)
                return Outcome(_died_judgment(code), time.monotonic() - t0)
            correct, status, reason, seconds = res
            return Outcome(Judgment(correct, status, reason), seconds)
        finally:
            if outstanding:  # interrupted mid-item: its late result must never answer another item
                w.kill()
            self._release([w])

    # -- many items -----------------------------------------------------------------------------

    def run_many(self, key: str, tasks: Sequence[tuple[str, str, int | None]], budget_s: float,
                 workers: int | None = None) -> list[Outcome]:
        """Grade `(answer, reference, num_choices)` tasks on up to `workers` workers; outcomes in input order.
        Items over their budget are then retried one at a time, alone, under the retry budget."""
        outcomes = self._run_many_once(key, tasks, budget_s, workers)
        return [self._retried(key, (*task,), budget_s, o) for task, o in zip(tasks, outcomes, strict=True)]

    def _run_many_once(self, key: str, tasks: Sequence[tuple[str, str, int | None]], budget_s: float,
                       workers: int | None = None) -> list[Outcome]:
        """Grade tasks on up to `workers` workers under a hard budget each (no retry)."""
        if not tasks:
            return []
        if workers and workers > self.max_workers:  # an explicit request may grow the pool
            with self._cond:
                self.max_workers = workers
        want = max(1, min(workers or self.max_workers, len(tasks)))
        ws = self._acquire(want)
        results: list[Outcome | None] = [None] * len(tasks)
        queue: deque[int] = deque(range(len(tasks)))
        busy: dict[int, tuple[_Worker, int, float]] = {}  # fd -> (worker, task index, start time)
        sel = selectors.DefaultSelector()
        try:
            for w in ws:
                sel.register(w.out_fd, selectors.EVENT_READ, w)

            def dispatch(w: _Worker) -> None:
                if queue and w.ready:
                    i = queue.popleft()
                    busy[w.out_fd] = (w, i, time.monotonic())
                    w.send((key, *tasks[i], budget_s))

            def swap(old: _Worker) -> _Worker:
                sel.unregister(old.out_fd)
                new = self._replace(old)
                ws[ws.index(old)] = new
                sel.register(new.out_fd, selectors.EVENT_READ, new)
                return new

            for w in ws:
                dispatch(w)
            while queue or busy:
                now = time.monotonic()
                deadlines = [t + budget_s + KILL_GRACE_S for (_, _, t) in busy.values()]
                timeout = max(0.0, min(deadlines) - now) if deadlines else START_TIMEOUT_S
                events = sel.select(timeout)
                if not events and not busy:
                    raise WorkerStartError(f"no grading worker started within {START_TIMEOUT_S:g} s")
                for sk, _ in events:
                    w = sk.data  # the _Worker registered with its fd
                    if not w.ready:
                        try:
                            w.read_ready()
                        except WorkerStartError:
                            sel.unregister(w.out_fd)
                            ws.remove(w)
                            with self._cond:
                                self._count -= 1
                            if not ws:
                                raise
                            continue
                        dispatch(w)
                        continue
                    _, i, t0 = busy[w.out_fd]
                    res = w.read_result()
                    del busy[w.out_fd]
                    if res is None:  # the worker died on this item
                        results[i] = Outcome(_died_judgment(_exit_code(w)), time.monotonic() - t0)
                        w = swap(w)
                    else:
                        correct, status, reason, seconds = res
                        results[i] = Outcome(Judgment(correct, status, reason), seconds)
                    dispatch(w)
                now = time.monotonic()
                for fd, (w, i, t0) in list(busy.items()):
                    if now - t0 > budget_s + KILL_GRACE_S:
                        del busy[fd]
                        results[i] = Outcome(_timeout_judgment(budget_s, now - t0), now - t0)
                        self.kills += 1
                        swap(w)  # the new worker gets work once it reports READY
        finally:
            sel.close()
            for w, _, _ in busy.values():  # interrupted mid-item: a late result must never answer another item
                w.kill()
            self._release(ws)
        return [r for r in results if r is not None]

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for w in idle:
            w.close()


_SHARED: WorkerPool | None = None
_SHARED_PID = 0
_SHARED_LOCK = threading.Lock()


def shared_pool() -> WorkerPool:
    """The process-wide worker pool (created on first use, closed at exit; a forked child gets its own)."""
    global _SHARED, _SHARED_PID
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED._closed or _SHARED_PID != os.getpid():
            # after fork() the inherited pool's pipes belong to the parent: never touch them here
            _SHARED, _SHARED_PID = WorkerPool(), os.getpid()
            atexit.register(_SHARED.close)
        return _SHARED

"""The one way audit starts another process, and the one way a run turns Ctrl-C and SIGTERM into a clean stop.

A process started by a shell without job control (`bash -c 'audit ... &'`), by nohup or by many schedulers
inherits SIGINT and SIGQUIT *ignored*, and an ignored disposition survives exec. A server launched from there
never sees the SIGINT audit sends to stop it (audit waited 30 s, then SIGTERM: exit -15 recorded where a
clean stop was meant), and a Python audit started so installs no KeyboardInterrupt handler of its own.
So every child starts with the default dispositions and an empty signal mask, whatever audit inherited,
and a run installs its own handlers for the signals that stop it.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

CHILD_DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGPIPE)
"""The signals every launched process starts with at their default disposition (not ignored, not blocked)."""


def _die_with_parent() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _child_setup(die_with_parent: bool) -> Callable[[], None]:
    def setup() -> None:  # runs in the child between fork and exec
        for sig in CHILD_DEFAULT_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, CHILD_DEFAULT_SIGNALS)
        if die_with_parent and sys.platform.startswith("linux"):
            _die_with_parent()

    return setup


def popen(argv: Sequence[str], *, die_with_parent: bool = False, **kwargs: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen(argv, **kwargs)` whose child starts with `CHILD_DEFAULT_SIGNALS` at their defaults
    (and, with `die_with_parent`, gets SIGTERM when audit dies). Every process audit launches goes through
    here or `run` (tests/test_procs.py lists the call sites)."""
    if "preexec_fn" in kwargs:
        raise TypeError("procs.popen sets preexec_fn itself")
    return subprocess.Popen(list(argv), preexec_fn=_child_setup(die_with_parent), **kwargs)


def run(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run(argv, **kwargs)` whose child starts with `CHILD_DEFAULT_SIGNALS` at their defaults."""
    if "preexec_fn" in kwargs:
        raise TypeError("procs.run sets preexec_fn itself")
    return subprocess.run(list(argv), preexec_fn=_child_setup(False), **kwargs)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise KeyboardInterrupt in the main thread, whatever audit inherited:
    a run started with SIGINT ignored (a background job, nohup) still stops cleanly on `kill -INT`, and
    `timeout` or a scheduler's SIGTERM stops it like Ctrl-C (the server stopped, the journal kept)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

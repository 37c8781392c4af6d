"""audit.procs: every process audit starts begins with default signal dispositions (issue 33), and no launch
site in audit/ goes around it."""

from __future__ import annotations

import ast
import signal
import subprocess
import sys

import pytest

from audit import procs
from tests.conftest import REPO

LAUNCHERS = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp",
           "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl",
           "spawnle", "spawnlp", "spawnlpe"},
    "multiprocessing": {"Process", "Pool", "get_context"},
    "pty": {"spawn", "fork"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
}
"""Every standard-library call that starts a process."""

ALLOWED = {
    ("audit/procs.py", "subprocess.Popen"): "the gate itself",
    ("audit/procs.py", "subprocess.run"): "the gate itself",
    ("audit/trace/collect.py", "os.fork"): "a fork of audit that reads half a trace and _exits: it execs nothing "
                                           "and is killed with SIGKILL, which no disposition stops",
}


def _launch_sites() -> list[tuple[str, int, str]]:
    sites = []
    for path in sorted((REPO / "audit").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in LAUNCHERS:
                for alias in node.names:
                    if alias.name in LAUNCHERS[node.module]:
                        sites.append((rel, node.lineno, f"from {node.module} import {alias.name}"))
            func = node.func if isinstance(node, ast.Call) else None
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and func.attr in LAUNCHERS.get(func.value.id, ()):
                sites.append((rel, func.lineno, f"{func.value.id}.{func.attr}"))
    return sites


def test_every_process_audit_starts_goes_through_procs():
    sites = _launch_sites()
    around = [f"{rel}:{line}: {what}" for rel, line, what in sites if (rel, what) not in ALLOWED]
    assert not around, "start processes with audit.procs.popen/run:\n" + "\n".join(around)
    # The allow-list names only sites that exist (a stale entry would hide a new one of the same name).
    assert {(rel, what) for rel, _, what in sites} == set(ALLOWED)


def test_the_scan_sees_a_launch_written_any_of_the_ways_it_knows(tmp_path, monkeypatch):
    fake = tmp_path / "audit"
    fake.mkdir()
    (fake / "x.py").write_text("import subprocess, os\nfrom subprocess import check_output\n"
                               "subprocess.Popen(['x'])\nos.system('x')\n")
    monkeypatch.setattr("tests.test_procs.REPO", tmp_path)
    assert [what for _, _, what in _launch_sites()] == \
        ["from subprocess import check_output", "subprocess.Popen", "os.system"]


def _status_masks(text: str) -> dict[str, int]:
    lines = (ln.split(":\t") for ln in text.splitlines() if ln.startswith(("SigIgn", "SigBlk")))
    return {k: int(v, 16) for k, v in lines}


def _bits(*sigs: signal.Signals) -> int:
    return sum(1 << (s - 1) for s in sigs)


@pytest.fixture
def hostile_dispositions():
    """This process with SIGINT and SIGQUIT ignored (as a background job or nohup starts it), SIGPIPE ignored
    (Python's own start-up does that) and SIGTERM blocked."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE)}
    for s in saved:
        signal.signal(s, signal.SIG_IGN)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for s, h in saved.items():
            signal.signal(s, h)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_launched_process_starts_with_default_dispositions_whatever_audit_inherited(hostile_dispositions):
    four = _bits(*procs.CHILD_DEFAULT_SIGNALS)
    # What a plain Popen gives the child (the failure of issue 33): the ignored and blocked signals stay so.
    plain = _status_masks(subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True,
                                         check=True).stdout)
    assert plain["SigIgn"] & four == _bits(signal.SIGINT, signal.SIGQUIT)  # (restore_signals resets SIGPIPE)
    assert plain["SigBlk"] & four == _bits(signal.SIGTERM)
    for start in (procs.run, lambda argv, **kw: procs.popen(argv, **kw).communicate()):
        got = start(["cat", "/proc/self/status"], stdout=subprocess.PIPE, text=True)
        out = got.stdout if isinstance(got, subprocess.CompletedProcess) else got[0]
        masks = _status_masks(out)
        assert masks["SigIgn"] & four == 0 and masks["SigBlk"] & four == 0


def test_the_gate_keeps_its_own_child_setup():
    with pytest.raises(TypeError, match="sets preexec_fn itself"):
        procs.popen(["true"], preexec_fn=lambda: None)


def test_a_run_stops_on_sigint_even_when_it_was_inherited_ignored():
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt), procs.stop_signals_interrupt():
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # restored after the run
        with pytest.raises(KeyboardInterrupt), procs.stop_signals_interrupt():
            signal.raise_signal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGINT, saved)


IGNORING = [sys.executable, "-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "signal.signal(signal.SIGQUIT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"]
"""A wrapper that starts a command as `bash -c 'CMD &'` or nohup does for SIGINT and SIGQUIT: ignored."""


def ignoring_sigint(argv: list[str]) -> list[str]:
    return [*IGNORING, *argv]


def test_the_wrapper_really_ignores_sigint():
    out = subprocess.run(ignoring_sigint(["/bin/cat", "/proc/self/status"]), capture_output=True, text=True,
                         check=True).stdout
    assert _status_masks(out)["SigIgn"] & _bits(signal.SIGINT, signal.SIGQUIT) == _bits(signal.SIGINT,
                                                                                          signal.SIGQUIT)


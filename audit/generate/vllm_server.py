"""Start, watch and stop a vLLM OpenAI-compatible server; read what it applied from its log.

`audit generate --launch ARGS` runs `python -m vllm.entrypoints.openai.api_server`
(the module behind `vllm serve`; the console script is not on PATH when vLLM is
installed with `pip --target`) with the model, host, port and
`--enable-log-requests` added, its output captured to a log file that goes into
the package. The server runs in its own process session and gets SIGTERM if audit
dies (Linux `PR_SET_PDEATHSIG`); `stop()` sends SIGINT (vLLM shuts down cleanly,
exit 0, as VLLM.md recorded), then SIGTERM, then SIGKILL to the whole group.

What the server applied, from vLLM v0.26.0's own log lines (commit ffd46bfab):

- `vllm/entrypoints/serve/utils/request_logger.py: log_inputs` logs, at INFO, for
  every request when `--enable-log-requests` is on:
  `Received request {request_id}: params: {SamplingParams!r}, lora_request: ...`.
  The SamplingParams are the ones the engine runs with: built by
  `to_sampling_params` (request values, else the server defaults) and normalised
  by `SamplingParams.__post_init__` (e.g. greedy resets top_p/top_k/min_p).
  The request id is `cmpl-{X-Request-Id}-{i}` for completions
  (`completion/serving.py`) and `chatcmpl-{X-Request-Id}` for chat
  (`chat_completion/serving.py`).
- `vllm/sampling_params.py: SamplingParams.__repr__` lists `n, presence_penalty,
  frequency_penalty, repetition_penalty, temperature, top_p, top_k, min_p, seed,
  stop, stop_token_ids, bad_words, thinking_token_budget, include_stop_str_in_output,
  ignore_eos, max_tokens, min_tokens, logprobs, ...` in that order.
- `vllm/config/model.py: get_diff_sampling_param` logs once at start-up
  "Default vLLM sampling parameters have been overridden by ...: `{dict}`" when
  the model's generation_config.json (or `--override-generation-config`) sets
  defaults; those defaults apply only to parameters a request leaves unset.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit import procs
from audit.errors import AuditError
from audit.fileio import head_and_tail
from audit.generate.openai_http import OpenAIServer

DEFAULT_PROGRAM = "{python} -m vllm.entrypoints.openai.api_server"
"""The launch command before the arguments; `{python}` is the running interpreter."""


class ServerDied(AuditError):
    """The launched server exited or stopped answering; the message ends with its last log lines."""


def parse_launch_args(text: str, model: str) -> list[str]:
    """The server arguments of `--launch`: either bare flags or a whole `vllm serve [MODEL] FLAGS` line."""
    try:
        args = shlex.split(text)
    except ValueError as e:
        raise AuditError(f"--launch: cannot split {text!r}: {e}") from None
    if args[:2] == ["vllm", "serve"]:
        args = args[2:]
        if args and not args[0].startswith("-"):
            positional = args.pop(0)
            if positional != model:
                raise AuditError(f"--launch names model {positional!r} but --model is {model!r}")
    for flag in ("--host", "--model"):
        if has_flag(args, flag):
            raise AuditError(f"--launch: leave {flag} out (audit sets it)")
    return args


def has_flag(args: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in args)


def flag_value(args: list[str], flag: str) -> str | None:
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def tail_lines(path: Path, n: int = 20) -> list[str]:
    """The last `n` lines of a log file (reads at most its last 64 KiB)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 65536))
            data = f.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()[-n:]


KEPT_LOG_BYTES = 16 * 1024 * 1024
"""Most of a launched server's log that a package keeps: its first and last halves, with a line between them
saying how much was left out (a server can write gigabytes)."""


def kept_log(path: Path) -> bytes:
    """The part of a launched server's log that its package keeps (`KEPT_LOG_BYTES`)."""
    return head_and_tail(path, KEPT_LOG_BYTES)[0]


@dataclass
class LaunchedServer:
    """One server process started by audit, its log file and its URL."""

    program: list[str]
    model: str
    args: list[str]
    log_path: Path
    host: str = "127.0.0.1"
    port: int | None = None
    log_requests: bool = True
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        given = flag_value(self.args, "--port")
        if given is not None:
            if not (given.isascii() and given.isdigit()):  # (int() reads "٨٠٠٠" as 8000)
                raise AuditError(f"--launch: --port {given!r} is not a port number in ASCII digits")
            self.port = int(given)
        elif self.port is None:
            self.port = free_port()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def command(self) -> list[str]:
        cmd = [*self.program, "--model", self.model, "--host", self.host]
        if not has_flag(self.args, "--port"):
            cmd += ["--port", str(self.port)]
        if self.log_requests and not has_flag(self.args, "--enable-log-requests"):
            cmd.append("--enable-log-requests")
        return cmd + self.args

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        log.write(f"# audit: {shlex.join(self.command)}\n".encode())
        log.flush()
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            self.proc = procs.popen(self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True, die_with_parent=True)
        except OSError as e:
            raise AuditError(f"cannot start the server ({shlex.join(self.command)}): {e}") from None
        finally:
            log.close()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n: int = 20) -> str:
        lines = tail_lines(self.log_path, n)
        return "\n".join(lines) if lines else "(the log is empty)"

    def died(self, what: str) -> ServerDied:
        code = self.proc.poll() if self.proc else None
        state = f"exited with code {code}" if code is not None else "is running but not answering"
        return ServerDied(f"{what}: the server {state}; last lines of {self.log_path}:\n{self.tail()}")

    def wait_ready(self, timeout: float, poll: float = 1.0) -> None:
        """Wait for `GET /health` to answer 200; raise ServerDied if the process exits or time runs out.

        Polls every 0.1 s at first, slowing to every `poll` seconds (vLLM takes a minute to load).
        """
        client = OpenAIServer(self.url, timeout=10)
        deadline = time.monotonic() + timeout
        wait = 0.1
        while True:
            if not self.alive():
                raise self.died("the server did not come up")
            if client.health(timeout=min(5.0, poll + 1)):
                return
            if time.monotonic() >= deadline:
                err = self.died(f"no answer from {self.url}/health within {timeout:g} s")
                self.stop()
                raise err
            time.sleep(wait)
            wait = min(poll, wait * 2)

    def stop(self, grace: float = 30.0) -> int | None:
        """SIGINT to the process group, then SIGTERM, then SIGKILL; return the exit code."""
        if self.proc is None:
            return None
        for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        # The engine's own children share the group: make sure none is left behind.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return self.proc.poll()


def kill_stale(pid: int, marker: str) -> bool:
    """Kill the process group of a server left by a run that was killed, if `pid` still runs `marker`."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\x00", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    if marker not in cmdline:
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return True
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists():
                return True
            time.sleep(0.1)
    return True


# --------------------------------------------------------------------------- log parsing

_RECEIVED = re.compile(r"Received request (\S+): params: SamplingParams\((.*)\), lora_request")
_PARAM_KEYS = (
    "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature", "top_p", "top_k",
    "min_p", "seed", "stop", "stop_token_ids", "bad_words", "thinking_token_budget",
    "include_stop_str_in_output", "ignore_eos", "max_tokens", "min_tokens", "logprobs", "prompt_logprobs",
    "skip_special_tokens", "spaces_between_special_tokens", "structured_outputs", "extra_args",
)
_DEFAULTS = re.compile(r"Default vLLM sampling parameters have been overridden by (.*?): `(\{.*\})`")


def parse_sampling_params(inner: str) -> dict[str, Any]:
    """The fields of a `SamplingParams(...)` repr (without the outer name and parentheses).

    Keys are looked for in the repr's fixed order, each after the one before, so a stop
    string that happens to contain ", top_k=" cannot be read as a field.
    """
    marks: list[tuple[str, int, int]] = []
    pos = 0
    for key in _PARAM_KEYS:
        m = re.compile(r"(?:^|, )" + key + "=").search(inner, pos)
        if m:
            marks.append((key, m.start(), m.end()))
            pos = m.end()
    out: dict[str, Any] = {}
    for i, (key, _, start) in enumerate(marks):
        end = marks[i + 1][1] if i + 1 < len(marks) else len(inner)
        raw = inner[start:end]
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw  # e.g. a dataclass repr: kept as text
    return out


def parse_received(line: str) -> tuple[str, dict[str, Any]] | None:
    """(request id, sampling params) from a `Received request` log line, else None."""
    m = _RECEIVED.search(line)
    if not m:
        return None
    return m.group(1), parse_sampling_params(m.group(2))


def parse_default_overrides(text: str) -> dict[str, Any] | None:
    """The server-wide sampling defaults vLLM announced at start-up, with their source, or None."""
    m = _DEFAULTS.search(text)
    if not m:
        return None
    try:
        values = ast.literal_eval(m.group(2))
    except (ValueError, SyntaxError):
        values = m.group(2)
    return {"source": m.group(1), "defaults": values}


def logged_ids(request_id: str) -> tuple[str, ...]:
    """The ids vLLM logs for a request sent with `X-Request-Id: request_id`."""
    return (f"cmpl-{request_id}-0", f"chatcmpl-{request_id}", request_id)


class LogWatcher:
    """Reads a growing server log and collects the parameters logged for each request id."""

    MAX_LINE = 1024 * 1024
    """Longest log line read (a `Received request` line is a few hundred bytes); longer ones are skipped."""
    CHUNK = 16 * 1024 * 1024
    """A poll reads the log's new bytes this many at a time, so a log grown by gigabytes is not loaded whole."""

    def __init__(self, path: Path):
        self.path = path
        self._offset = 0
        self._partial = b""
        self._skipping = False
        self.applied: dict[str, dict[str, Any]] = {}

    def poll(self) -> None:
        try:
            f = open(self.path, "rb")
        except OSError:
            return
        with f:
            f.seek(self._offset)
            while data := f.read(self.CHUNK):
                self._offset += len(data)
                self._feed(data)

    def _feed(self, data: bytes) -> None:
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if self._skipping and lines:
            lines.pop(0)  # the end of an over-long line
            self._skipping = False
        if len(self._partial) > self.MAX_LINE:
            self._partial, self._skipping = b"", True
        for raw in lines:
            if len(raw) > self.MAX_LINE:
                continue
            if b"Received request" not in raw:
                continue
            got = parse_received(raw.decode("utf-8", "replace"))
            if got:
                self.applied[got[0]] = got[1]

    def lookup(self, request_id: str) -> dict[str, Any] | None:
        for rid in logged_ids(request_id):
            if rid in self.applied:
                return self.applied[rid]
        return None

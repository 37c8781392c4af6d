"""`audit generate`: responses from a vLLM server, with a record of what really happened.

A run renders each item with a versioned prompt template (`audit.generate.prompts`), asks the
server how many tokens the prompt is, sends every sampling parameter explicitly with
`max_tokens = min(cap, context_window - prompt_tokens)`, streams the reply, and
appends one `ResponseRow` per request to a journal that is flushed as each request
completes. The package (`PackageWriter`: atomic) is written from the journal at
the end, with the items used, the server logs and the full configuration.

Paths below are in vLLM v0.26.0 (the wheel's `vllm/_version.py`: commit ffd46bfab).

Budgets. vLLM rejects a request whose prompt plus `max_tokens` exceeds
`max_model_len` (`vllm/renderers/params.py: TokenizeParams._token_len_check`) and
otherwise silently lowers `max_tokens` to what is left
(`vllm/entrypoints/serve/utils/api_utils.py: get_max_tokens`). So the prompt is
counted by the server itself (`POST /tokenize`; for chat with the same chat
template and generation prompt as the chat endpoint) and an item whose prompt
leaves no room is recorded as excluded with its token count, never sent.

Sampling as applied. vLLM fills a parameter from the model's generation_config.json
only when the request leaves it unset (`CompletionRequest.to_sampling_params`,
`ChatCompletionRequest.to_sampling_params`: `if (x := self.x) is None: x =
default_sampling_params.get(...)`), and `get_diff_sampling_param`
(`vllm/config/model.py`) reads only repetition_penalty, temperature, top_k, top_p,
min_p and max_new_tokens. Hence:

1. Every one of those (and seed, stop, min_tokens, presence/frequency penalty, n)
   is sent on every request, so no server default can apply to them; the model's
   generation_config.json is read (for a local model) and recorded beside what was
   sent, and `--use-model-defaults` sends its values explicitly instead of neutral ones.
2. `SamplingParams.__post_init__` (`vllm/sampling_params.py`) changes some values:
   a temperature below 1e-5 is greedy and resets top_p/top_k/min_p to 1/0/0; one in
   (0, 0.01) is raised to 0.01; seed -1 means none. Such settings are refused up
   front, so what is recorded is what the engine runs with.
3. `max_new_tokens` becomes a server-wide cap on `max_tokens` with
   `--generation-config PATH` or `--override-generation-config`
   (`OpenAIServingCompletion.override_max_tokens`). Every reply is checked: a
   `length` finish before the requested `max_tokens` means a smaller ceiling was
   applied, and the run stops.
4. When the server's log is at hand (always with `--launch`, which adds
   `--enable-log-requests`; with `--server-log` for a server started elsewhere),
   every request's `Received request ... SamplingParams(...)` line is compared
   with what was sent before the row is kept. Any difference stops the run.
5. `usage.prompt_tokens` must equal the `/tokenize` count, else the budget was
   computed for another prompt and the run stops.

Seeds. Request seed = `--seed` + attempt * K + sample: distinct for every sample and
re-sample of an item, and recorded on every row.

Crash safety. Rows are appended to `OUT.work/journal.jsonl` with one `write` and an
fsync each; `--resume OUT` re-plans from the journal (a torn last line is dropped),
so a killed run loses only requests in flight and never repeats a finished one.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import random
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any

import pydantic

from audit.errors import AuditError
from audit.fileio import (
    JsonError,
    dumps,
    dumps_pretty,
    loads_strict,
    read_document,
    read_regular,
    sha256_file,
    write_atomic,
)
from audit.generate.openai_http import Cut, Malformed, OpenAIServer, Rejected, ServerError, StreamResult, Transient
from audit.generate.prompts import PromptTemplate, chat_messages, prompt_sha256
from audit.generate.vllm_server import (
    DEFAULT_PROGRAM,
    LaunchedServer,
    LogWatcher,
    kill_stale,
    parse_default_overrides,
    parse_launch_args,
)
from audit.models import DatasetRef, ItemRow, Manifest, Provenance, ResponseRow
from audit.outputs import check_output
from audit.packages import PackageWriter, open_package, row_to_json
from audit.specs import prompt_for

RUN_FORMAT = "audit-generate-run.v1"
GREEDY_EPS = 1e-5
"""vLLM's `_SAMPLING_EPS`: temperatures below it are greedy."""
MIN_TEMPERATURE = 1e-2
"""vLLM's `_MAX_TEMP`: positive temperatures below it are raised to it."""
LOG_WAIT_S = 15.0
"""How long a finished request may wait for its `Received request` log line."""
MODES = ("chat", "completion")


class RefusedRun(AuditError):
    """The server did something other than what the run would record: nothing more is kept."""


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Sampling:
    """The sampling parameters sent, all of them, with every request."""

    temperature: float
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    min_tokens: int = 0
    stop: tuple[str, ...] = ()

    def problems(self) -> list[str]:
        """Settings vLLM would change or reject: refused, so the record stays true."""
        out = []
        t = self.temperature
        if not 0.0 <= t <= 2.0:
            out.append(f"temperature {t} is outside [0, 2]")
        elif 0 < t < MIN_TEMPERATURE:
            out.append(f"temperature {t} would be raised to {MIN_TEMPERATURE} by vLLM; use 0 or >= {MIN_TEMPERATURE}")
        if t < GREEDY_EPS:
            for name, neutral in (("top_p", 1.0), ("top_k", 0), ("min_p", 0.0)):
                if getattr(self, name) != neutral:
                    out.append(f"at temperature 0 vLLM resets {name} to {neutral}; leave {name} at {neutral}")
        if not 0.0 < self.top_p <= 1.0:
            out.append(f"top_p {self.top_p} is outside (0, 1]")
        if self.top_k < 0:
            out.append(f"top_k {self.top_k}: use 0 to disable")
        if not 0.0 <= self.min_p <= 1.0:
            out.append(f"min_p {self.min_p} is outside [0, 1]")
        if self.repetition_penalty <= 0:
            out.append(f"repetition_penalty {self.repetition_penalty} must be > 0")
        for name in ("presence_penalty", "frequency_penalty"):
            if not -2.0 <= getattr(self, name) <= 2.0:
                out.append(f"{name} {getattr(self, name)} is outside [-2, 2]")
        if self.min_tokens < 0:
            out.append("min_tokens must be >= 0")
        if any(not s for s in self.stop):
            out.append("a stop string is empty")
        return out

    def request_fields(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k, "min_p": self.min_p,
            "repetition_penalty": self.repetition_penalty, "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty, "min_tokens": self.min_tokens, "stop": list(self.stop),
            "n": 1,
        }


SAMPLING_FROM_GENERATION_CONFIG = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")
"""The generation_config.json keys vLLM uses as request defaults (`get_diff_sampling_param`), but max_new_tokens."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that fixes what a run sends; stored in the work directory and the manifest."""

    benchmark: str
    items: str
    model: str
    sampling: Sampling
    max_tokens: int
    mode: str = "chat"
    prompt: str | None = None
    samples: int = 1
    seed: int = 0
    resample_truncated: int = 0
    resample_budget: int | None = None
    limit: int | None = None
    servers: tuple[str, ...] = ()
    launch: str | None = None
    launch_program: str = DEFAULT_PROGRAM
    served_model_name: str | None = None
    server_logs: tuple[str, ...] = ()
    log_check: bool = True
    hardware: str | None = None
    package_id: str | None = None
    use_model_defaults: bool = False

    def problems(self) -> list[str]:
        out = [f"sampling: {p}" for p in self.sampling.problems()]
        if self.mode not in MODES:
            out.append(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.max_tokens < 1:
            out.append("--max-tokens must be >= 1")
        if self.samples < 1:
            out.append("--samples must be >= 1")
        if self.seed < 0:
            out.append("--seed must be >= 0 (vLLM reads -1 as no seed)")
        if self.resample_truncated < 0:
            out.append("--resample-truncated must be >= 0")
        if self.resample_truncated and (self.resample_budget is None or self.resample_budget <= self.max_tokens):
            out.append("--resample-truncated needs --resample-budget larger than --max-tokens")
        if bool(self.servers) == bool(self.launch):
            out.append("give either --server URL (one or more) or --launch ARGS")
        if self.limit is not None and self.limit < 1:
            out.append("--limit must be >= 1")
        return out

    def seed_for(self, sample: int, attempt: int) -> int:
        """Distinct for every (sample, attempt) of an item: seed + attempt * samples + sample."""
        return self.seed + attempt * self.samples + sample

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["sampling"]["stop"] = list(self.sampling.stop)
        for k in ("servers", "server_logs"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunConfig:
        d = dict(d)
        s = dict(d.pop("sampling"))
        s["stop"] = tuple(s.get("stop", ()))
        for k in ("servers", "server_logs"):
            d[k] = tuple(d.get(k, ()))
        return cls(sampling=Sampling(**s), **d)


@dataclass(frozen=True)
class Runtime:
    """Settings that may change between a run and its resumption: they do not change what is sent."""

    concurrency: int = 1
    """Requests in flight at once on each server."""
    retries: int = 4
    backoff_s: float = 0.5
    """First retry waits this long; each further retry twice as long (with jitter)."""
    request_timeout: float = 3600.0
    """Seconds one request may take in all (connect, headers, the whole stream); a request past it is cut."""
    launch_timeout: float = 900.0
    progress: bool = True


# --------------------------------------------------------------------------- journal


def _check_run_dir(work: Path) -> None:
    """Refuse unless `work` is an unfinished run's folder (a run.json of this format inside, not a link)."""
    try:
        ok = not work.is_symlink() and json.loads((work / "run.json").read_text(encoding="utf-8")).get(
            "format") == RUN_FORMAT
    except (OSError, ValueError, AttributeError):
        ok = False
    if not ok:
        raise AuditError("--force replaces only what audit wrote; this is not an unfinished run's folder "
                         "(no run.json of an audit run)", path=str(work))


def work_dir(out: Path) -> Path:
    """Where an unfinished run keeps its journal, config and logs: `OUT.work` beside the package."""
    return out.parent / f"{out.name}.work"


class Journal:
    """Rows appended one `write` at a time and fsync'd: a kill loses at most the row being written."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, row: ResponseRow) -> None:
        data = (dumps(row_to_json(row)) + "\n").encode("utf-8")
        os.write(self._fd, data)
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_journal(path: Path, repair: bool = False) -> list[ResponseRow]:
    """The journal's rows; a torn last line (a kill mid-write) is dropped, and cut off when `repair`."""
    if not path.exists():
        return []
    data = path.read_bytes()
    keep = len(data)
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
    rows = []
    lines = data[:keep].split(b"\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(ResponseRow.model_validate(json.loads(line)))
        except (json.JSONDecodeError, UnicodeDecodeError, pydantic.ValidationError) as e:
            if n == len(lines) - 1 and keep == len(data):
                # The last complete-looking line can still be torn if it was cut exactly at a newline.
                keep = len(b"\n".join(lines[:n - 1])) + (1 if n > 1 else 0)
                break
            raise AuditError(f"unreadable journal line: {str(e).splitlines()[0]}", path=str(path), row=n) from None
    if repair and keep != len(data):
        with open(path, "r+b") as f:
            f.truncate(keep)
    return rows


def _key(row: ResponseRow) -> tuple[str, int, int]:
    return (row.item_id, row.sample, row.attempt)


def rows_by_key(rows: list[ResponseRow], path: Path) -> dict[tuple[str, int, int], ResponseRow]:
    """The journal's rows by (item, sample, attempt); a key seen twice means the journal is not this code's."""
    out: dict[tuple[str, int, int], ResponseRow] = {}
    for r in rows:
        k = _key(r)
        if k in out:
            raise AuditError(f"the journal holds two results for item {k[0]!r} sample {k[1]} attempt {k[2]}",
                             path=str(path))
        out[k] = r
    return out


def _log_head(path: Path) -> str:
    """The start of a launched server's log, where vLLM announces its sampling defaults: at most
    MAX_LOG_HEAD_BYTES (a log of days of requests, or one a server padded, is not read whole)."""
    try:
        return read_regular(path, follow_links=True, limit=MAX_LOG_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


MAX_LOG_HEAD_BYTES = 16 << 20
"""vLLM logs its start-up (arguments, model loading, the defaults line) in well under 1 MiB."""


# --------------------------------------------------------------------------- model files


MAX_GENERATION_CONFIG_BYTES = 1 << 20


def read_generation_config(model: str) -> dict[str, Any] | None:
    """The model's generation_config.json when `model` is a local directory holding one."""
    p = Path(model) / "generation_config.json"
    if not p.is_file():
        return None
    # A regular file of at most 1 MiB (a real one is under 1 KB), parsed strictly: a key twice is refused.
    data, err = read_document(p, MAX_GENERATION_CONFIG_BYTES, what="a generation_config.json")
    if err:
        raise AuditError(err, path=str(p))
    try:
        obj = loads_strict(data)
    except JsonError as e:
        raise AuditError(f"unreadable: {e}", path=str(p), field=e.field) from None
    if not isinstance(obj, dict):
        raise AuditError("expected a JSON object", path=str(p))
    return obj


def model_files(model: str) -> dict[str, Any] | None:
    """sha256 of a local model's config and tokenizer files, and the names and sizes of its weight files."""
    d = Path(model)
    if not d.is_dir():
        return None
    hashed = {}
    for name in ("config.json", "generation_config.json", "tokenizer_config.json", "tokenizer.json",
                 "special_tokens_map.json", "chat_template.jinja", "model.safetensors.index.json"):
        if (d / name).is_file():
            hashed[name] = sha256_file(d / name)[0]
    weights = {p.name: p.stat().st_size for p in sorted(d.iterdir())
               if p.is_file() and p.suffix in (".safetensors", ".bin", ".pt", ".gguf")}
    return {"sha256": hashed, "weights_bytes": weights}


def apply_model_defaults(sampling: Sampling, given: set[str], gen: dict[str, Any] | None) -> Sampling:
    """Fill parameters not given on the command line from generation_config.json, as vLLM would."""
    if not gen:
        return sampling
    values = {k: gen[k] for k in SAMPLING_FROM_GENERATION_CONFIG if k not in given and gen.get(k) is not None}
    for k, v in values.items():  # (int("٣") is 3: a number given as text is refused, not read)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (k == "top_k" and v != int(v)):
            kind = "an integer" if k == "top_k" else "a number"
            raise AuditError(f"generation_config.json: {k} is {v!r}, not {kind}")
    if "top_k" in values:
        values["top_k"] = max(0, int(values["top_k"]))
    return replace(sampling, **values)


def detect_hardware() -> str | None:
    """`Nx GPU NAME` from nvidia-smi (honouring CUDA_VISIBLE_DEVICES by count), else None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = [n.strip() for n in out.stdout.splitlines() if n.strip()]
    if out.returncode != 0 or not names:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        idx = [int(x) for x in visible.split(",") if x.strip().isascii() and x.strip().isdigit()]
        names = [names[i] for i in idx if i < len(names)] or names
    counts = Counter(names)
    return ", ".join(f"{n}x {name}" for name, n in counts.items())


# --------------------------------------------------------------------------- progress


class Progress:
    """Rows done, tokens/s and ETA on stderr: a redrawn bar on a terminal, a line every 10% otherwise."""

    def __init__(self, label: str, total: int, enabled: bool = True, stream: IO[str] | None = None):
        self.label = label
        self.total = total
        self.done = 0
        self.tokens = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = self.enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.monotonic()
        self._last = 0.0
        self._next_line = 0

    def update(self, tokens: int = 0) -> None:
        self.done += 1
        self.tokens += tokens
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            if now - self._last >= 0.1 or self.done == self.total:
                self._last = now
                self.stream.write("\r" + self.render(now))
                self.stream.flush()
        elif self.done >= self._next_line or self.done == self.total or now - self._last >= 30:
            self._last = now
            self._next_line = self.done + max(1, self.total // 10)
            self.stream.write(self.render(now) + "\n")
            self.stream.flush()

    def render(self, now: float) -> str:
        elapsed = max(now - self.t0, 1e-9)
        rate = self.tokens / elapsed
        left = self.total - self.done
        eta = elapsed / self.done * left if self.done else float("nan")
        eta_s = "?" if eta != eta else (f"{int(eta // 60)}m{int(eta % 60):02d}s" if eta >= 60 else f"{eta:.0f}s")
        if self.tty:
            width = 24
            filled = int(width * self.done / self.total)
            bar = "#" * filled + "." * (width - filled)
            return f"{self.label} [{bar}] {self.done}/{self.total} rows  {rate:.1f} tok/s  ETA {eta_s} "
        return f"{self.label}: {self.done}/{self.total} rows, {rate:.1f} tok/s, ETA {eta_s}"

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# --------------------------------------------------------------------------- one run


@dataclass(frozen=True)
class Task:
    item_id: str
    sample: int
    attempt: int
    cap: int
    """The output ceiling before the context limit: --max-tokens, or --resample-budget for re-samples."""


@dataclass
class Outcome:
    task: Task
    row: ResponseRow | None = None
    request_id: str | None = None
    sent: dict[str, Any] | None = None
    server: int | None = None
    requeue: bool = False
    fatal: BaseException | None = None
    completed_at: float = field(default_factory=time.monotonic)


@dataclass
class ServerSlot:
    index: int
    client: OpenAIServer
    launched: LaunchedServer | None = None
    dead: bool = False
    info: dict[str, Any] = field(default_factory=dict)


class GenerateRun:
    """One invocation of `audit generate` (a new run or a resumption) on its work directory."""

    def __init__(self, out: Path, cfg: RunConfig, rt: Runtime, *, state: dict[str, Any], log: IO[str]):
        self.out = out
        self.cfg = cfg
        self.rt = rt
        self.state = state
        self.log = log
        self.work = work_dir(out)
        self.journal_path = self.work / "journal.jsonl"
        self.session = len(state["sessions"])
        self.template: PromptTemplate = prompt_for(cfg.benchmark, cfg.prompt)
        self.items: list[ItemRow] = []
        self.item_index: dict[str, int] = {}
        self.prompts: dict[str, tuple[str, str]] = {}
        self.token_counts: dict[str, int] = {}
        self._tok_lock = threading.Lock()
        self.slots: list[ServerSlot] = []
        self.watchers: list[LogWatcher] = []
        self.served_name: str = ""
        self.context_window: int = 0
        self.stop_event = threading.Event()
        self.requests_verified = 0

    def note(self, msg: str) -> None:
        self.log.write(f"audit generate: {msg}\n")
        self.log.flush()

    # ------------------------------------------------------------------ items and prompts

    def load_items(self) -> None:
        path = Path(self.cfg.items)
        with open_package(path) as pkg:
            if not pkg.files("item_row.v1"):
                raise AuditError(f"is a {pkg.kind!r} package without item rows", path=str(path))
            digest = pkg.digest
            items_prov = pkg.manifest.provenance
            items = list(pkg.iter_rows("item_row.v1"))
            pid = pkg.manifest.package_id
        known = self.state.get("items")
        if known and known["digest"] != digest:
            raise AuditError(f"the items package changed since the run started (digest {digest[:12]}, "
                             f"run recorded {known['digest'][:12]})", path=str(path))
        self.state["items"] = {"path": str(path), "digest": digest, "package_id": pid,
                               "dataset": items_prov.dataset.model_dump(mode="json") if items_prov.dataset else None}
        if self.cfg.limit is not None:
            items = items[: self.cfg.limit]
        self.items = items
        self.item_index = {it.item_id: i for i, it in enumerate(items)}
        for it in items:
            try:
                text = self.template.render(it)
            except AuditError as e:
                raise AuditError(f"cannot render prompt {self.template.key}: {e}", path=str(path)) from None
            self.prompts[it.item_id] = (text, prompt_sha256(self.cfg.mode, text))

    # ------------------------------------------------------------------ servers

    def connect(self) -> None:
        cfg = self.cfg
        session: dict[str, Any] = {"index": self.session, "started_at": time.time(), "servers": []}
        self.state["sessions"].append(session)
        if cfg.launch:
            for prev in self.state["sessions"][:-1]:
                pid = prev.get("launch", {}).get("pid")
                if pid and kill_stale(pid, f"--model {cfg.model}"):
                    self.note(f"stopped server pid {pid} left by an earlier, killed run")
            args = parse_launch_args(cfg.launch, cfg.model)
            program = [sys.executable if p == "{python}" else p for p in shlex.split(cfg.launch_program)]
            log_rel = f"logs/server-{self.session}.log"
            srv = LaunchedServer(program=program, model=cfg.model, args=args, log_path=self.work / log_rel,
                                 log_requests=cfg.log_check)
            session["launch"] = {"command": srv.command, "log": log_rel}
            self.note(f"starting the server: {' '.join(srv.command)}")
            srv.start()
            # In the slots from now on, so that stop_servers() stops it whatever happens next.
            self.slots = [ServerSlot(0, self._client(srv.url), launched=srv)]
            session["launch"]["pid"] = srv.pid
            self._save_state()
            t0 = time.monotonic()
            srv.wait_ready(self.rt.launch_timeout)
            session["launch"]["ready_s"] = round(time.monotonic() - t0, 3)
            self.note(f"server ready at {srv.url} after {time.monotonic() - t0:.1f} s")
            if cfg.log_check:
                self.watchers = [LogWatcher(srv.log_path)]
        else:
            urls = self.state.get("server_override") or cfg.servers
            self.slots = [ServerSlot(i, self._client(u)) for i, u in enumerate(urls)]
            if cfg.log_check and cfg.server_logs:
                self.watchers = [LogWatcher(Path(p)) for p in cfg.server_logs]
        for slot in self.slots:
            slot.info = self._describe(slot)
            session["servers"].append(slot.info)
        self._check_servers_agree()
        self._save_state()

    def _client(self, url: str) -> OpenAIServer:
        # --request-timeout bounds each read and each request in all (a server dripping bytes is cut).
        return OpenAIServer(url, timeout=self.rt.request_timeout, deadline=self.rt.request_timeout)

    def _describe(self, slot: ServerSlot) -> dict[str, Any]:
        c = slot.client
        try:
            if not c.health(timeout=10):
                raise AuditError(f"{c.url}/health does not answer 200")
            version = c.version()
            models = c.models()
        except ServerError as e:
            raise AuditError(f"server {c.url}: {e}") from None
        ids = [m["id"] for m in models]
        want = self.cfg.served_model_name or self.cfg.model
        card = next((m for m in models if m["id"] == want), None)
        if card is None:
            card = next((m for m in models if m.get("root") == self.cfg.model), None)
        if card is None and len(models) == 1 and self.cfg.launch:
            card = models[0]
        if card is None:
            raise AuditError(f"server {c.url} does not serve {want!r} (it serves: {', '.join(ids) or 'nothing'}); "
                             "give --served-model-name")
        mml = card.get("max_model_len")
        if not isinstance(mml, int) or mml < 1:
            raise AuditError(f"server {c.url}: /v1/models reports no max_model_len for {card['id']!r}")
        info = {"url": c.url, "version": version, "model": card["id"], "root": card.get("root"),
                "max_model_len": mml}
        server_config = c.server_info()
        if server_config:
            info["server_config"] = server_config
        return info

    def _check_servers_agree(self) -> None:
        first = self.slots[0].info
        for slot in self.slots[1:]:
            for k in ("version", "model", "max_model_len"):
                if slot.info[k] != first[k]:
                    raise AuditError(f"servers disagree on {k}: {first['url']} has {first[k]!r}, "
                                     f"{slot.info['url']} has {slot.info[k]!r}")
        pinned = self.state.get("server")
        now = {k: first[k] for k in ("version", "model", "max_model_len")}
        if pinned is None:
            self.state["server"] = now
        elif pinned != now:
            diff = ", ".join(f"{k} {pinned[k]!r} -> {now[k]!r}" for k in now if pinned[k] != now[k])
            raise AuditError(f"the server differs from the one this run started with ({diff}); the rows would mix "
                             "two setups")
        self.served_name = first["model"]
        self.context_window = first["max_model_len"]

    def stop_servers(self) -> None:
        if len(self.state["sessions"]) <= self.session:
            return
        session = self.state["sessions"][self.session]
        for slot in self.slots:
            if slot.launched is not None:
                code = slot.launched.stop()
                session.setdefault("launch", {})["exit_code"] = code
                overrides = parse_default_overrides(_log_head(slot.launched.log_path))
                if overrides:
                    session["server_default_sampling"] = overrides
        session["finished_at"] = time.time()
        self._save_state()

    def _save_state(self) -> None:
        write_atomic(self.work / "run.json", dumps_pretty(self.state))

    # ------------------------------------------------------------------ planning

    def plan(self, done: dict[tuple[str, int, int], ResponseRow]) -> tuple[str, list[Task]]:
        cfg = self.cfg
        first: list[Task] = []
        for it in self.items:
            for s in range(cfg.samples):
                k = (it.item_id, s, 0)
                if k not in done:
                    first.append(Task(it.item_id, s, 0, cfg.max_tokens))
        if first:
            return "attempt 0", first
        again: list[Task] = []
        budget = cfg.resample_budget or cfg.max_tokens
        latest: dict[tuple[str, int], int] = {}  # one pass over the done rows, not one per item and sample
        for i, ss, a in done:
            latest[(i, ss)] = max(a, latest.get((i, ss), a))
        for it in self.items:
            for s in range(cfg.samples):
                last_attempt = latest[(it.item_id, s)]
                k = (it.item_id, s, last_attempt)
                last = done[k]
                if last.finish_reason == "length" and last.error is None and last_attempt < cfg.resample_truncated:
                    again.append(Task(it.item_id, s, last_attempt + 1, budget))
        if not again:
            return "", []
        return f"re-sample (attempt {max(t.attempt for t in again)})", again

    # ------------------------------------------------------------------ one request

    def token_count(self, item_id: str, slot: ServerSlot) -> int:
        with self._tok_lock:
            if item_id in self.token_counts:
                return self.token_counts[item_id]
        text = self.prompts[item_id][0]
        last: Exception | None = None
        for attempt in range(self.rt.retries + 1):
            try:
                if self.cfg.mode == "chat":
                    n, mml = slot.client.tokenize(self.served_name, messages=chat_messages(text))
                else:
                    n, mml = slot.client.tokenize(self.served_name, prompt=text)
                break
            except Transient as e:
                last = e
                self._check_alive(slot, e)
                time.sleep(self.rt.backoff_s * 2 ** attempt)
        else:
            msg = f"POST /tokenize failed after {self.rt.retries + 1} tries: {last}"
            raise _TaskFailed(msg, server_gone=not slot.client.health(timeout=10))
        if mml is not None and mml != self.context_window:
            raise RefusedRun(f"/tokenize reports max_model_len {mml} but /v1/models said {self.context_window}")
        with self._tok_lock:
            self.token_counts[item_id] = n
        return n

    def _check_alive(self, slot: ServerSlot, err: Exception) -> None:
        if slot.launched is not None and not slot.launched.alive():
            raise slot.launched.died(f"request failed ({err})")

    def request_body(self, item_id: str, max_tokens: int, seed: int) -> tuple[str, dict[str, Any]]:
        text = self.prompts[item_id][0]
        body: dict[str, Any] = {"model": self.served_name}
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
        cfg = self.cfg
        text, sha = self.prompts[task.item_id]
        base = dict(item_id=task.item_id, sample=task.sample, attempt=task.attempt, prompt_sha256=sha)
        try:
            n_prompt = self.token_count(task.item_id, slot)
        except (Rejected, Malformed, Cut) as e:
            return Outcome(task, row=ResponseRow(**base, response=None, error=f"counting prompt tokens: {e}"),
                           server=slot.index)
        except _TaskFailed as e:
            if e.server_gone:
                return Outcome(task, requeue=True, server=slot.index,
                               fatal=AuditError(f"server {slot.client.url} stopped answering: {e}"))
            return Outcome(task, row=ResponseRow(**base, response=None, error=str(e)), server=slot.index)
        room = self.context_window - n_prompt
        if room < 1:
            row = ResponseRow(**base, response=None, prompt_tokens=n_prompt,
                              excluded=f"prompt does not fit the context window: {n_prompt} prompt tokens, "
                                       f"window {self.context_window}",
                              extra={"context_window": self.context_window})
            return Outcome(task, row=row, server=slot.index)
        max_tokens = min(task.cap, room)
        seed = cfg.seed_for(task.sample, task.attempt)
        path, body = self.request_body(task.item_id, max_tokens, seed)
        rid_base = f"audit-{self.state['run_id']}-{self.session}-{self.item_index[task.item_id]}" \
                   f"-s{task.sample}-a{task.attempt}"
        last_err: str | None = None
        started = time.time()
        for attempt in range(self.rt.retries + 1):
            if self.stop_event.is_set():
                raise _Stopped()
            rid = f"{rid_base}-t{attempt}"
            try:
                res = slot.client.generate(path, body, chat=cfg.mode == "chat", request_id=rid)
            except Transient as e:
                last_err = str(e)
                self._check_alive(slot, e)
                if attempt < self.rt.retries:
                    time.sleep(self.rt.backoff_s * 2 ** attempt * (1 + random.random() / 2))
                continue
            except (Rejected, Malformed, Cut) as e:  # (a cut stream would be cut again: not retried)
                row = ResponseRow(**base, response=None, max_tokens=max_tokens, seed=seed, started_at=started,
                                  finished_at=time.time(), error=str(e),
                                  extra=self._extra(slot, rid, attempt + 1))
                return Outcome(task, row=row, server=slot.index)
            self._check_reply(res, n_prompt, max_tokens, task)
            extra = self._extra(slot, rid, attempt + 1)
            if res.stop_reason is not None:
                extra["stop_reason"] = res.stop_reason
            if res.reasoning is not None:
                extra["reasoning"] = res.reasoning
            # A `stop` at exactly max_tokens is recorded as such: whether the text ended or the budget
            # did cannot be told from the reply, so the row says so and policies decide.
            at_budget = res.finish_reason == "stop" and res.completion_tokens == max_tokens
            row = ResponseRow(**base, response=res.text, finish_reason=res.finish_reason,
                              prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens,
                              max_tokens=max_tokens, seed=seed, started_at=res.started_at,
                              first_token_s=None if res.first_token_s is None else round(res.first_token_s, 6),
                              finished_at=res.finished_at, at_budget=True if at_budget else None, extra=extra)
            sent = {k: body[k] for k in ("temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                                         "presence_penalty", "frequency_penalty", "min_tokens", "stop", "n", "seed")}
            sent["max_tokens"] = max_tokens
            return Outcome(task, row=row, request_id=rid, sent=sent, server=slot.index)
        # Retries exhausted: a server that stopped answering loses its share; one that answers
        # with errors gets the error recorded on the row.
        if not slot.client.health(timeout=10):
            self._check_alive(slot, Exception(last_err))
            return Outcome(task, requeue=True, server=slot.index,
                           fatal=AuditError(f"server {slot.client.url} stopped answering: {last_err}"))
        row = ResponseRow(**base, response=None, max_tokens=max_tokens, seed=seed, started_at=started,
                          finished_at=time.time(), error=f"{last_err} (after {self.rt.retries + 1} tries)",
                          extra=self._extra(slot, rid_base + f"-t{self.rt.retries}", self.rt.retries + 1))
        return Outcome(task, row=row, server=slot.index)

    def _extra(self, slot: ServerSlot, rid: str, tries: int) -> dict[str, Any]:
        extra: dict[str, Any] = {"request_id": rid, "session": self.session}
        if len(self.slots) > 1:
            extra["server"] = slot.index
        if tries > 1:
            extra["tries"] = tries
        return extra

    def _check_reply(self, res: StreamResult, n_prompt: int, max_tokens: int, task: Task) -> None:
        where = f"item {task.item_id!r} sample {task.sample} attempt {task.attempt}"
        if res.model is not None and res.model != self.served_name:
            raise RefusedRun(f"{where}: the reply names model {res.model!r}, not {self.served_name!r}")
        if res.prompt_tokens != n_prompt:
            raise RefusedRun(f"{where}: the server counted {res.prompt_tokens} prompt tokens but /tokenize counted "
                             f"{n_prompt}; the budget would be wrong")
        if res.completion_tokens > max_tokens:
            raise RefusedRun(f"{where}: {res.completion_tokens} completion tokens exceed max_tokens {max_tokens}")
        if res.finish_reason == "length" and res.completion_tokens < max_tokens:
            raise RefusedRun(f"{where}: stopped for length after {res.completion_tokens} tokens but max_tokens was "
                             f"{max_tokens}: the server applied a smaller ceiling (--generation-config PATH or "
                             "--override-generation-config with max_new_tokens?)")

    # ------------------------------------------------------------------ the worker pool

    def execute(self, label: str, tasks: list[Task], journal: Journal,
                done: dict[tuple[str, int, int], ResponseRow]) -> None:
        q: queue.Queue[Task] = queue.Queue()
        for t in tasks:
            q.put(t)
        results: queue.Queue[Outcome] = queue.Queue()
        remaining = len(tasks)
        all_done = threading.Event()
        progress = Progress(label, len(tasks), enabled=self.rt.progress, stream=self.log)
        n_workers = max(1, min(self.rt.concurrency * len(self.slots), len(tasks)))

        def worker(i: int) -> None:
            while not self.stop_event.is_set() and not all_done.is_set():
                try:
                    task = q.get(timeout=0.05)
                except queue.Empty:
                    continue
                alive = [s for s in self.slots if not s.dead]
                if not alive:
                    results.put(Outcome(task, fatal=AuditError("no server left to send requests to")))
                    return
                slot = alive[i % len(alive)]
                try:
                    results.put(self.run_task(task, slot))
                except _Stopped:
                    return
                except BaseException as e:  # noqa: BLE001 - handed to the main thread
                    results.put(Outcome(task, fatal=e))

        threads = [threading.Thread(target=worker, args=(i,), daemon=True, name=f"generate-{i}")
                   for i in range(n_workers)]
        for t in threads:
            t.start()
        waiting: list[Outcome] = []
        try:
            while remaining > 0:
                try:
                    oc = results.get(timeout=0.2)
                except queue.Empty:
                    oc = None
                if oc is not None:
                    if oc.requeue:
                        slot = self.slots[oc.server] if oc.server is not None else None
                        if slot is not None and not slot.dead:
                            slot.dead = True
                            self.note(f"{oc.fatal}; its requests go to the other servers")
                        if all(s.dead for s in self.slots):
                            raise oc.fatal or AuditError("every server stopped answering")
                        q.put(oc.task)
                    elif oc.fatal is not None:
                        raise oc.fatal
                    elif oc.request_id is not None and self.watchers:
                        waiting.append(oc)
                    else:
                        remaining -= self._keep(oc, journal, done, progress)
                if waiting:
                    for w in self.watchers:
                        w.poll()
                    still = []
                    for oc in waiting:
                        applied = next((a for w in self.watchers if (a := w.lookup(oc.request_id)) is not None),
                                       None)
                        if applied is not None:
                            self._compare_applied(oc, applied)
                            self.requests_verified += 1
                            self.state["sessions"][self.session]["requests_verified"] = self.requests_verified
                            remaining -= self._keep(oc, journal, done, progress)
                        elif time.monotonic() - oc.completed_at > LOG_WAIT_S:
                            raise RefusedRun(
                                f"no 'Received request {oc.request_id}' line in the server log within {LOG_WAIT_S:g} s "
                                "of the reply: cannot confirm the sampling parameters the server applied (is "
                                "--enable-log-requests on and the log level INFO? --no-log-check skips this check)")
                        else:
                            still.append(oc)
                    waiting = still
        finally:
            all_done.set()
            if remaining > 0:
                self.stop_event.set()
            progress.close()

    def _keep(self, oc: Outcome, journal: Journal, done: dict[tuple[str, int, int], ResponseRow],
              progress: Progress) -> int:
        assert oc.row is not None
        journal.append(oc.row)
        done[_key(oc.row)] = oc.row
        progress.update(oc.row.completion_tokens or 0)
        return 1

    def _compare_applied(self, oc: Outcome, applied: dict[str, Any]) -> None:
        assert oc.sent is not None and oc.row is not None
        diffs = []
        for k, sent in oc.sent.items():
            if k not in applied:
                if k in ("temperature", "top_p", "top_k", "seed", "max_tokens"):
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


class _Stopped(Exception):
    pass


class _TaskFailed(Exception):
    def __init__(self, msg: str, server_gone: bool = False):
        super().__init__(msg)
        self.server_gone = server_gone


# --------------------------------------------------------------------------- entry points


def _lock(work: Path) -> IO[str]:
    fh = open(work / "lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise AuditError("another `audit generate` is working on this run", path=str(work)) from None
    return fh


def start(out: Path, cfg: RunConfig, rt: Runtime, *, force: bool = False, given: set[str] | None = None,
          log: IO[str] | None = None) -> Manifest:
    """Begin a new run writing package `out` and carry it to the end."""
    log = log or sys.stderr
    problems = cfg.problems()
    if problems:
        raise AuditError("; ".join(problems))
    prompt_for(cfg.benchmark, cfg.prompt)  # unknown benchmark or template: refuse before anything else
    out = Path(out)
    work = work_dir(out)
    check_output(out, force=force)
    if work.exists():
        if not force:
            raise AuditError(f"an unfinished run is in {work}: continue it with `audit generate --resume {out}` "
                             "or start over with --force", path=str(out))
        _check_run_dir(work)  # --force removes an unfinished run, never a user's folder of that name
        shutil.rmtree(work)
    gen = read_generation_config(cfg.model)
    if cfg.use_model_defaults:
        cfg = replace(cfg, sampling=apply_model_defaults(cfg.sampling, given or set(), gen))
        problems = cfg.problems()
        if problems:
            raise AuditError("; ".join(problems))
    work.mkdir()
    state: dict[str, Any] = {
        "format": RUN_FORMAT, "run_id": secrets.token_hex(4), "created": time.time(), "config": cfg.to_json(),
        "overwrite": force, "generation_config": gen, "model_files": model_files(cfg.model), "sessions": [],
    }
    write_atomic(work / "run.json", dumps_pretty(state))
    if gen:
        differs = {k: gen[k] for k in SAMPLING_FROM_GENERATION_CONFIG
                   if gen.get(k) is not None and gen[k] != getattr(cfg.sampling, k)}
        if differs:
            sent = ", ".join(f"{k}={getattr(cfg.sampling, k)}" for k in differs)
            log.write(f"audit generate: note: the model's generation_config.json has "
                      f"{', '.join(f'{k}={v}' for k, v in differs.items())}; sending {sent} explicitly "
                      "(both are recorded)\n")
    return _run(out, cfg, rt, state, log)


def resume(out: Path, rt: Runtime, *, servers: tuple[str, ...] = (), log: IO[str] | None = None) -> Manifest:
    """Continue the unfinished run of package `out` from its journal."""
    log = log or sys.stderr
    out = Path(out)
    work = work_dir(out)
    if not work.is_dir():
        if out.exists():
            raise AuditError("is already finished (no unfinished run beside it)", path=str(out))
        raise AuditError(f"no unfinished run to resume (no {work.name} beside it)", path=str(out))
    try:
        state = json.loads((work / "run.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise AuditError(f"unreadable run state: {e}", path=str(work / "run.json")) from None
    if state.get("format") != RUN_FORMAT:
        raise AuditError(f"not a run this audit can resume (format {state.get('format')!r})", path=str(work))
    cfg = RunConfig.from_json(state["config"])
    if out.exists():
        with open_package(out) as pkg:
            if pkg.manifest.provenance.extra.get("run_id") == state["run_id"]:
                shutil.rmtree(work)
                log.write(f"audit generate: {out} was already written; removed its work directory\n")
                return pkg.manifest
        if not state.get("overwrite"):
            raise AuditError("exists and is not this run's package", path=str(out))
    if servers:
        if cfg.launch:
            raise AuditError("this run launches its own server; --server cannot replace it")
        state["server_override"] = list(servers)
    return _run(out, cfg, rt, state, log)


def _sigterm_as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _run(out: Path, cfg: RunConfig, rt: Runtime, state: dict[str, Any], log: IO[str]) -> Manifest:
    # SIGTERM (`timeout`, a scheduler) stops the run like Ctrl-C: the server is stopped, the journal kept.
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        return _run_locked(out, cfg, rt, state, log)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run_locked(out: Path, cfg: RunConfig, rt: Runtime, state: dict[str, Any], log: IO[str]) -> Manifest:
    work = work_dir(out)
    lock = _lock(work)
    run = GenerateRun(out, cfg, rt, state=state, log=log)
    journal: Journal | None = None
    try:
        run.load_items()
        rows = read_journal(run.journal_path, repair=True)
        done = rows_by_key(rows, run.journal_path)
        unknown = {k[0] for k in done} - set(run.item_index)
        if unknown:
            raise AuditError(f"the journal has rows for items not in this run: {sorted(unknown)[:5]}",
                             path=str(run.journal_path))
        if rows:
            log.write(f"audit generate: resuming with {len(done)} rows already done\n")
        journal = Journal(run.journal_path)
        label, tasks = run.plan(done)
        if tasks:
            try:
                run.connect()
                while tasks:
                    run.execute(label, tasks, journal, done)
                    label, tasks = run.plan(done)
            except KeyboardInterrupt:
                run.stop_event.set()
                log.write(f"\naudit generate: interrupted; {len(done)} rows are kept in {work}; continue with "
                          f"`audit generate --resume {out}`\n")
                raise
            except BaseException:
                run.stop_event.set()
                raise
            finally:
                run.stop_servers()
        journal.close()
        journal = None
        return _finish(run, done)
    except AuditError:
        if work.exists():
            log.write(f"audit generate: the rows done so far are kept in {work}\n")
        raise
    finally:
        if journal is not None:
            journal.close()
        lock.close()


def _finish(run: GenerateRun, done: dict[tuple[str, int, int], ResponseRow]) -> Manifest:
    cfg, state = run.cfg, run.state
    rows = sorted(done.values(), key=lambda r: (run.item_index[r.item_id], r.sample, r.attempt))
    counts = Counter()
    attempts: Counter[int] = Counter()
    for r in rows:
        attempts[r.attempt] += 1
        counts["excluded" if r.excluded else "errors" if r.error else
               "truncated" if r.finish_reason == "length" else "finished"] += 1
    sessions = state["sessions"]
    first = state.get("server") or {}
    engine_version = first.get("version")
    items_info = state["items"]
    dataset = None
    if items_info.get("dataset"):
        dataset = DatasetRef.model_validate(items_info["dataset"])
    sampling = {**cfg.sampling.request_fields(), "max_tokens": "min(cap, context_window - prompt_tokens)",
                "max_tokens_cap": cfg.max_tokens, "seed": f"{cfg.seed} + attempt * {cfg.samples} + sample",
                "samples": cfg.samples, "mode": cfg.mode}
    if cfg.resample_truncated:
        sampling.update(resample_truncated=cfg.resample_truncated, resample_budget=cfg.resample_budget)
    hardware = cfg.hardware or (detect_hardware() if cfg.launch else None)
    if run.watchers:
        check = {"method": "server log",
                 "requests_verified": sum(s.get("requests_verified", 0) for s in sessions),
                 "detail": "every kept row's `Received request ... SamplingParams(...)` line in the server log "
                           "matched what was sent"}
    else:
        check = {"method": "replies only",
                 "detail": "no server log: checked usage.prompt_tokens == /tokenize count, completion_tokens <= "
                           "max_tokens and that a length finish came at max_tokens"}
    if not cfg.log_check:
        check["disabled"] = "--no-log-check"
    template = run.template
    extra = {
        "run_id": state["run_id"],
        "generator": "audit generate",
        "config": cfg.to_json(),
        "items_package": {k: items_info[k] for k in ("package_id", "digest", "path")},
        "prompt": {"template": template.key, "fingerprint": template.fingerprint, "source": template.source,
                   "mode": cfg.mode,
                   "prompt_sha256_of": "the prompt text (UTF-8)" if cfg.mode == "completion" else
                   "the chat messages as canonical JSON ([{\"role\":\"user\",\"content\":...}], no spaces)"},
        "context_window": run.context_window or first.get("max_model_len"),
        "generation_config": state.get("generation_config"),
        "model_files": state.get("model_files"),
        "sampling_check": check,
        "sessions": sessions,
        "counts": {**dict(sorted(counts.items())), "rows": len(rows),
                   "attempts": {str(k): v for k, v in sorted(attempts.items())}},
    }
    prov = Provenance(
        model=first.get("model") or cfg.model,
        engine="vllm" if engine_version else "openai-compatible server",
        engine_version=engine_version,
        hardware=hardware,
        dataset=dataset,
        sampling=sampling,
        notes=f"Generated by `audit generate` with prompt {template.key} ({cfg.mode} endpoint); every sampling "
              "parameter was sent with every request.",
        extra=extra,
    )
    writer = PackageWriter(run.out, kind="responses", benchmark=cfg.benchmark, provenance=prov,
                           package_id=cfg.package_id, overwrite=bool(state.get("overwrite")))
    try:
        with writer.rows("responses.jsonl", "response_row.v1") as sink:
            for r in rows:
                sink.write(r)
        with writer.rows("items.jsonl", "item_row.v1") as sink:
            for it in run.items:
                sink.write(it)
        for s in sessions:
            rel = s.get("launch", {}).get("log")
            if rel and (run.work / rel).exists():
                writer.add_file(rel, run.work / rel)
        manifest = writer.commit()
    except BaseException:
        writer.abort()
        raise
    shutil.rmtree(run.work, ignore_errors=True)
    return manifest


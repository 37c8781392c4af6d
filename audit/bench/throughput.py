"""`audit bench throughput`: decode throughput the lab's way, as a command that records everything.

A run: connect to the servers (or launch one), start the GPU sampler, send a discarded warm-up,
build a pool of prompts of exactly `prompt_tokens` tokens (counted by the server), then keep
`concurrency` streamed requests in flight on each server through W back-to-back windows of S
seconds. Requests are not paused at window edges; the client closes the streams still open when
the last window ends (vLLM aborts them). The server's Prometheus counters are read at every window
edge. Optionally an anchor command (`vllm bench serve`) then measures the same server. The rows,
the windows and the figures go into a `throughput` package; the GPU counters into a `telemetry`
package linked to it by content digest (`audit.bench.store`).
"""

from __future__ import annotations

import math
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from audit import procs
from audit.bench import promtext
from audit.bench.client import NoChunkUsage, StreamOutcome, request_body, stream_completion
from audit.bench.clock import RunClock
from audit.bench.prompt import Prompt, PromptBuilder, PromptSpec
from audit.bench.rows import BenchRequestRow, BenchWindowRow
from audit.bench.telemetry import MIN_GPM_INTERVAL_S, DeviceLayer, NvmlLayer, Sampler, SamplerResult
from audit.errors import AuditError
from audit.generate.openai_http import OpenAIServer, ServerError
from audit.generate.vllm_server import DEFAULT_PROGRAM, LaunchedServer, parse_launch_args

MAX_POOL = 100_000
"""Most prompts a run builds; past them prompts are reused (rows say which one was sent)."""
MAX_METRICS_BYTES = 4 * 1024 * 1024
"""Largest `/metrics` page read (vLLM's is tens of kilobytes); a larger one is the window's counters error."""
MAX_ANCHOR_LOG_BYTES = 16 * 1024 * 1024
"""Most output of the anchor command kept in anchor.log; the rest is read and dropped."""
MAX_SERVER_STRING = 512
"""Longest model id or version string a server may report (they are recorded in the package)."""

Phase = Literal["warmup", "timed"]
"""A request's phase, as its BenchRequestRow records it."""


@dataclass(frozen=True)
class BenchConfig:
    """Everything that fixes how a run measures; recorded in the package."""

    arm: str
    prompt_tokens: int = 1024
    max_tokens: int = 256
    ignore_eos: bool = False
    concurrency: int = 1
    warmup_requests: int = 2
    windows: int = 3
    window_s: float = 60.0
    stall_s: float = 10.0
    request_timeout_s: float = 600.0
    filler: str = "the"
    marker: str = "#{index:05d}"
    servers: tuple[str, ...] = ()
    launch: str | None = None
    launch_program: str = DEFAULT_PROGRAM
    launch_timeout: float = 900.0
    model: str | None = None
    telemetry: bool = True
    sample_hz: float = 10.0
    gpm_interval_s: float = 0.5
    gpm: bool = True
    anchor: str | None = None
    anchor_timeout: float = 900.0
    hardware: str | None = None
    package_id: str | None = None

    def problems(self) -> list[str]:
        out = []
        if not self.arm or any(c.isspace() for c in self.arm):
            out.append("--arm must be a non-empty word")
        for name, v, lo in (("--prompt-tokens", self.prompt_tokens, 1), ("--max-tokens", self.max_tokens, 1),
                            ("--concurrency", self.concurrency, 1), ("--warmup-requests", self.warmup_requests, 0),
                            ("--windows", self.windows, 1)):
            if v < lo:
                out.append(f"{name} must be >= {lo}")
        for name, seconds in (("--window-s", self.window_s), ("--stall-s", self.stall_s),
                              ("--request-timeout-s", self.request_timeout_s),
                              ("--launch-timeout", self.launch_timeout), ("--anchor-timeout", self.anchor_timeout)):
            if not (seconds > 0 and math.isfinite(seconds)):
                out.append(f"{name} must be > 0")
        if not 0 < self.sample_hz <= 100:
            out.append("--sample-hz must be in (0, 100]")
        if self.gpm_interval_s < MIN_GPM_INTERVAL_S:
            out.append(f"--gpm-interval-s must be >= {MIN_GPM_INTERVAL_S} (GPM returns zeros or NaN over shorter "
                       "intervals)")
        if bool(self.servers) == bool(self.launch):
            out.append("give --server URL (repeatable) or --launch ARGS")
        if self.launch and not self.model:
            out.append("--launch needs --model")
        if "{index" not in self.marker:
            out.append("--marker must contain {index} (each prompt needs its own marker)")
        return out

    def record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Slot:
    server: int
    slot: int
    client: OpenAIServer
    model: str


@dataclass
class RunResult:
    """What `run` measured, before it is written."""

    config: BenchConfig
    rows: list[BenchRequestRow]
    windows: list[BenchWindowRow]
    servers: list[dict[str, Any]]
    model: str
    prompt: dict[str, Any]
    telemetry: SamplerResult | None
    anchor: dict[str, Any] | None = None
    anchor_result: Path | None = None
    anchor_log: Path | None = None
    notes: list[str] = field(default_factory=list)
    work: Path | None = None


def fetch_counters(url: str, timeout: float = 5.0) -> dict[str, float]:
    """The kept Prometheus counters of one server (`GET /metrics`)."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=timeout) as resp:
            data = resp.read(MAX_METRICS_BYTES + 1)
        if len(data) > MAX_METRICS_BYTES:
            raise ServerError(f"GET /metrics: more than {MAX_METRICS_BYTES:,} bytes")
        return promtext.parse_counters(data.decode("utf-8", "replace"))
    except urllib.error.HTTPError as e:
        raise ServerError(f"GET /metrics: HTTP {e.code}") from None
    except (OSError, ValueError) as e:
        raise ServerError(f"GET /metrics: {type(e).__name__}: {e}") from None


class _Run:
    def __init__(self, cfg: BenchConfig, layer: DeviceLayer | None, log: IO[str] | None, work: Path):
        self.cfg = cfg
        self.layer = layer
        self.log = log
        self.work = work
        self.clock = RunClock()
        self.slots: list[_Slot] = []
        self.urls: list[str] = []
        self.launched: LaunchedServer | None = None
        self.rows: list[BenchRequestRow] = []
        self.lock = threading.Lock()
        self.next_request = 0
        self.pool: list[Prompt] = []
        self.pool_start = 0
        self.next_prompt = 0
        self.builder: PromptBuilder | None = None
        self.build_lock = threading.Lock()
        self.built_late = 0
        self.fatal: Exception | None = None
        self.sampler: Sampler | None = None
        self.telemetry: SamplerResult | None = None
        self.notes: list[str] = []

    def note(self, msg: str) -> None:
        if self.log is not None:
            print(f"audit bench: {msg}", file=self.log, flush=True)

    # ------------------------------------------------------------------ servers

    def connect(self) -> list[dict[str, Any]]:
        cfg = self.cfg
        if cfg.launch:
            assert cfg.model is not None
            program = shlex.split(cfg.launch_program.replace("{python}", shlex.quote(sys.executable)))
            self.launched = LaunchedServer(program=program, model=cfg.model,
                                           args=parse_launch_args(cfg.launch, cfg.model),
                                           log_path=self.work / "server.log", log_requests=False)
            self.note(f"starting {shlex.join(self.launched.command)}")
            t0 = time.monotonic()
            self.launched.start()
            self.launched.wait_ready(cfg.launch_timeout)
            self.note(f"server ready after {time.monotonic() - t0:.0f} s at {self.launched.url}")
            self.urls = [self.launched.url]
        else:
            self.urls = [OpenAIServer(u).url for u in cfg.servers]
        described = []
        for i, url in enumerate(self.urls):
            client = OpenAIServer(url, timeout=cfg.stall_s)
            try:
                cards = client.models()
                version = client.version()
            except ServerError as e:
                raise AuditError(f"server {url}: {e}") from None
            for what, text in [("/version", version), *(("a model id", c["id"]) for c in cards[:1000])]:
                if isinstance(text, str) and len(text) > MAX_SERVER_STRING:
                    raise AuditError(f"server {url}: {what} is {len(text):,} characters long (at most "
                                     f"{MAX_SERVER_STRING} are recorded)")
            if cfg.model:
                card = next((c for c in cards if c["id"] == cfg.model), None)
                if card is None:
                    raise AuditError(f"server {url} serves {', '.join(c['id'] for c in cards)}, not {cfg.model!r}")
            else:
                card = cards[0]
            mml = card.get("max_model_len")
            if isinstance(mml, int) and cfg.prompt_tokens + cfg.max_tokens > mml:
                raise AuditError(f"--prompt-tokens {cfg.prompt_tokens} + --max-tokens {cfg.max_tokens} exceed the "
                                 f"server's context window ({mml} tokens)")
            described.append({"url": url, "model": card["id"], "root": card.get("root"), "max_model_len": mml,
                              "version": version})
            for s in range(cfg.concurrency):
                self.slots.append(_Slot(i, s, client, card["id"]))
        models = {d["model"] for d in described}
        if len(models) > 1:
            raise AuditError(f"the servers serve different models: {', '.join(sorted(models))}")
        return described

    def counters(self) -> tuple[dict[str, float] | None, str | None]:
        total: dict[str, float] = {}
        for url in self.urls:
            try:
                total = promtext.add_counters(total, fetch_counters(url))
            except ServerError as e:
                return None, f"{url}: {e}"
        return total, None

    def check_server(self) -> None:
        if self.launched is not None and not self.launched.alive():
            raise self.launched.died("the server stopped during the run")

    # ------------------------------------------------------------------ requests

    def _take_prompt(self) -> Prompt:
        with self.lock:
            i = self.next_prompt
            self.next_prompt += 1
            if i < len(self.pool):
                return self.pool[i]
        # The pool ran out (requests were faster than the warm-up suggested): one more, built now.
        assert self.builder is not None  # build_pool set it before any request
        with self.build_lock:
            p = self.builder.build(self.pool_start + i)
            self.built_late += 1
            return p

    def _send(self, slot: _Slot, prompt: Prompt, phase: Phase, cut_at: float | None) -> BenchRequestRow:
        cfg = self.cfg
        with self.lock:
            n = self.next_request
            self.next_request += 1
        body = request_body(slot.model, prompt.text, cfg.max_tokens, cfg.ignore_eos)
        out: StreamOutcome = stream_completion(slot.client, body, self.clock, cut_at=cut_at, stall_s=cfg.stall_s,
                                               request_id=f"audit-bench-{n}")
        if out.ended == "done" and out.prompt_tokens != cfg.prompt_tokens:
            raise AuditError(f"request {n}: the server counted {out.prompt_tokens} prompt tokens, /tokenize "
                             f"counted {cfg.prompt_tokens}: the prompt length would be wrong")
        row = BenchRequestRow(
            request=n, phase=phase, server=slot.server, slot=slot.slot, prompt_index=prompt.index,
            started_at=out.started_at, first_token_at=out.first_token_at, finished_at=out.finished_at,
            prompt_tokens=out.prompt_tokens, output_tokens=len(out.token_times), max_tokens=cfg.max_tokens,
            token_times=out.token_times, chunks=out.chunks, bundled_chunks=out.bundled_chunks,
            finish_reason=out.finish_reason, ended=out.ended, error=out.error)
        with self.lock:
            self.rows.append(row)
        return row

    def _loop(self, slot: _Slot, phase: Phase, count: int | None, end: float | None) -> None:
        try:
            sent = 0
            while self.fatal is None:
                if count is not None and sent >= count:
                    return
                if end is not None and self.clock.now() >= end:
                    return
                # Every request has a cut time: the end of the last window, or for a warm-up request its
                # own timeout (an endless stream would otherwise hold the run forever).
                cut = end if end is not None else self.clock.now() + self.cfg.request_timeout_s
                row = self._send(slot, self._take_prompt(), phase, cut)
                sent += 1
                if phase == "warmup" and row.ended == "cut":
                    raise AuditError(f"warm-up request {row.request} did not finish within "
                                     f"{self.cfg.request_timeout_s:g} s (--request-timeout-s): the server kept "
                                     f"streaming after {row.output_tokens} tokens")
                if row.ended == "error":
                    self.check_server()
                    time.sleep(min(1.0, self.cfg.stall_s))  # a failing server must not be hammered
        except NoChunkUsage as e:
            self.fatal = AuditError(str(e))
        except Exception as e:
            self.fatal = e

    def _run_slots(self, phase: Phase, count: int | None, end: float | None) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._loop, args=(s, phase, count, end), daemon=True,
                                    name=f"audit-bench-{s.server}-{s.slot}") for s in self.slots]
        for t in threads:
            t.start()
        return threads

    def _join(self, threads: list[threading.Thread], deadline_s: float) -> None:
        limit = time.monotonic() + deadline_s
        for t in threads:
            t.join(max(0.0, limit - time.monotonic()))
        if any(t.is_alive() for t in threads):
            self.fatal = self.fatal or AuditError("requests did not end after the last window (stream never closed)")
        if self.fatal is not None:
            raise self.fatal

    def build_pool(self, builder: PromptBuilder, start: int, n: int) -> None:
        t0 = time.monotonic()
        self.builder = builder
        self.pool = [builder.build(start + i) for i in range(n)]
        self.pool_start = start
        self.next_prompt = 0
        self.note(f"built {n} prompts of {self.cfg.prompt_tokens} tokens ({builder.calls} /tokenize calls, "
                  f"{time.monotonic() - t0:.1f} s)")

    # ------------------------------------------------------------------ the run

    def run(self) -> RunResult:
        cfg = self.cfg
        servers = self.connect()
        model = self.slots[0].model
        tokenizer = self.slots[0].client
        spec = PromptSpec(tokens=cfg.prompt_tokens, filler=cfg.filler, marker=cfg.marker)

        def count(text: str) -> int:
            try:
                return tokenizer.tokenize(model, prompt=text)[0]
            except ServerError as e:
                raise AuditError(f"POST /tokenize: {e}") from None

        builder = PromptBuilder(spec, count)
        if cfg.telemetry:
            self.sampler = Sampler(self.layer or NvmlLayer(), self.clock, hz=cfg.sample_hz,
                                   gpm_interval_s=cfg.gpm_interval_s, gpm=cfg.gpm).start()
            self.note(f"telemetry: {self.sampler.status}, {len(self.sampler.devices)} GPU(s)")
        try:
            warm = len(self.slots) * cfg.warmup_requests
            if warm:
                self.build_pool(builder, 0, warm)
                t0 = time.monotonic()
                self._join(self._run_slots("warmup", cfg.warmup_requests, None),
                           cfg.warmup_requests * (cfg.request_timeout_s + cfg.stall_s) + 60)
                self.note(f"warm-up: {warm} requests in {time.monotonic() - t0:.1f} s")
            durations = [r.finished_at - r.started_at for r in self.rows if r.ended == "done"]
            per = statistics.median(durations) if durations else 1.0
            need = math.ceil(cfg.windows * cfg.window_s / max(per, 0.01) * len(self.slots) * 1.5) + 2 * len(self.slots)
            self.build_pool(builder, warm, min(MAX_POOL, need))

            edges: list[tuple[float, dict[str, float] | None, str | None]] = []
            t0 = self.clock.now()
            if self.sampler is not None:
                self.sampler.mark()
            c0, e0 = self.counters()
            edges.append((t0, c0, e0))
            end = t0 + cfg.windows * cfg.window_s
            threads = self._run_slots("timed", None, end)
            for k in range(1, cfg.windows + 1):
                edge = t0 + k * cfg.window_s
                while (left := edge - self.clock.now()) > 0 and self.fatal is None:
                    time.sleep(min(left, 0.25))
                if self.fatal is not None:
                    break
                if self.sampler is not None:
                    self.sampler.mark()
                c, e = self.counters()
                edges.append((edge, c, e))
                self.note(f"window {k - 1} done")
            self._join(threads, cfg.stall_s + 60)
            self.check_server()
            windows = []
            for k in range(cfg.windows):
                (s, ca, ea), (t, cb, eb) = edges[k], edges[k + 1]
                bad = promtext.inconsistency(ca, cb) if ca is not None and cb is not None else None
                if bad is not None:  # the server's counters contradict themselves: no figure from them
                    ca, cb, ea = None, None, f"server counters inconsistent: {bad}"
                windows.append(BenchWindowRow(window=k, start=round(s, 6), end=round(t, 6), server_counters_start=ca,
                                              server_counters_end=cb, counters_error=ea or eb))
            if self.built_late:
                self.notes.append(f"{self.built_late} prompts were built during the windows (one /tokenize call "
                                  f"each): the pool of {len(self.pool)} ran out")
            result = RunResult(config=cfg, rows=sorted(self.rows, key=lambda r: r.request), windows=windows,
                               servers=servers, model=model, notes=self.notes,
                               prompt={"tokens": cfg.prompt_tokens, "filler": cfg.filler, "marker": cfg.marker,
                                       "counted_by": "POST /tokenize (the completions endpoint's defaults)",
                                       "example": self.pool[0].text[:200] if self.pool else None,
                                       "fillers": self.pool[0].fillers if self.pool else None,
                                       "prompts": len(self.pool) + warm + self.built_late,
                                       "tokenize_calls": builder.calls},
                               telemetry=None, work=self.work)
            if cfg.anchor:
                self.run_anchor(result)
            return result
        finally:
            if self.sampler is not None:
                self.telemetry = self.sampler.stop()
            if self.launched is not None:
                code = self.launched.stop()
                self.note(f"server stopped (exit code {code})")

    def run_anchor(self, result: RunResult) -> None:
        cfg = self.cfg
        assert cfg.anchor is not None
        result_path = self.work / "anchor.json"
        values = {"url": self.urls[0], "model": result.model, "python": sys.executable,
                  "prompt_tokens": str(cfg.prompt_tokens), "max_tokens": str(cfg.max_tokens),
                  "result": str(result_path), "result_dir": str(self.work), "result_name": result_path.name}
        try:
            argv = [a.format(**values) for a in shlex.split(cfg.anchor)]
        except (KeyError, ValueError, IndexError) as e:
            raise AuditError(f"--anchor: cannot fill in {cfg.anchor!r}: {e}") from None
        log_path = self.work / "anchor.log"
        self.note(f"anchor: {shlex.join(argv)}")
        t0 = time.monotonic()
        code = _run_capped(argv, log_path, cfg.anchor_timeout)
        result.anchor = {"command": shlex.join(argv), "exit_code": code, "seconds": round(time.monotonic() - t0, 1)}
        result.anchor_log = log_path
        if code == 0 and result_path.is_file():
            result.anchor_result = result_path
        else:
            why = "timed out" if code is None else f"exit code {code}" if code else "wrote no result file"
            self.notes.append(f"the anchor command failed ({why}); see anchor.log")
        self.note(f"anchor finished ({'ok' if result.anchor_result else 'failed'}) in {result.anchor['seconds']} s")


def _run_capped(argv: list[str], log_path: Path, timeout: float) -> int | None:
    """Run `argv` for at most `timeout` s (None: it was killed there), its output into `log_path`, of which
    at most MAX_ANCHOR_LOG_BYTES are kept (the rest is read and dropped, with a line saying how much)."""
    with open(log_path, "wb") as logf:
        try:
            proc = procs.popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as e:
            logf.write(f"cannot start: {e}\n".encode())
            return 127
        dropped = [0]

        def drain() -> None:
            kept = 0
            assert proc.stdout is not None
            while chunk := proc.stdout.read(65536):
                room = max(0, MAX_ANCHOR_LOG_BYTES - kept)
                logf.write(chunk[:room])
                kept += min(room, len(chunk))
                dropped[0] += len(chunk) - min(room, len(chunk))

        reader = threading.Thread(target=drain, daemon=True, name="audit-bench-anchor-log")
        reader.start()
        try:
            code: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
        reader.join(10)
        if dropped[0]:
            logf.write(f"\n[audit: {dropped[0]:,} bytes of more output left out]\n".encode())
    return code


def run(cfg: BenchConfig, *, layer: DeviceLayer | None = None, log: IO[str] | None = None,
        work_parent: Path | None = None) -> RunResult:
    """Measure; the caller writes the result (`audit.bench.store.write`) and removes `result.work`."""
    problems = cfg.problems()
    if problems:
        raise AuditError(problems[0])
    work = Path(tempfile.mkdtemp(prefix=".audit-bench-", dir=work_parent))
    r = _Run(cfg, layer, log, work)
    try:
        result = r.run()
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    result.telemetry = r.telemetry
    return result


def hardware_of(result: RunResult) -> str | None:
    """`1x NVIDIA H200` from the GPUs NVML saw, else the configured text."""
    if result.config.hardware:
        return result.config.hardware
    tel = result.telemetry
    if tel is None or not tel.devices:
        return None
    names = Counter(d.name for d in tel.devices)
    return ", ".join(f"{n}x {name}" for name, n in sorted(names.items()))

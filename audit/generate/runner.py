"""`audit generate`: responses from a vLLM server, with a record of what really happened.

A run renders each item with a versioned prompt template (`audit.prompts`), asks the
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

The steps, one module each: `config` (what is sent), `state` (the run record), `model_info`
(the model's files and the machine), `journal` (rows kept as they finish, the lock), `plan`
(items, prompts, what is left to send), `servers` (launch or attach), `requests` (one request),
`pool` (a round of requests and the server-log check), `progress`, `provenance` and `package`
(the package at the end). This module sequences them.
"""

from __future__ import annotations

import secrets
import shutil
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import IO

from audit import procs
from audit.errors import AuditError
from audit.generate.config import RunConfig, Runtime
from audit.generate.journal import Journal, RowKey, lock_run, read_journal, rows_by_key
from audit.generate.model_info import apply_model_defaults, generation_config_note, model_files, read_generation_config
from audit.generate.package import ordered_rows, write_package
from audit.generate.plan import RunItems, load_items, plan
from audit.generate.pool import Round
from audit.generate.provenance import build_provenance
from audit.generate.requests import Requester
from audit.generate.servers import Servers
from audit.generate.state import RunState, check_run_dir, load_state, save_state, work_dir
from audit.models import Manifest, ResponseRow
from audit.outputs import check_output
from audit.packages import open_package
from audit.specs import prompt_for


def start(out: Path, cfg: RunConfig, rt: Runtime, *, force: bool = False, given: set[str] | None = None,
          log: IO[str] | None = None) -> Manifest:
    """Begin a new run writing package `out` and carry it to the end."""
    log = log or sys.stderr
    _refuse_problems(cfg)
    prompt_for(cfg.benchmark, cfg.prompt)  # unknown benchmark or template: refuse before anything else
    out = Path(out)
    work = work_dir(out)
    check_output(out, force=force)
    _clear_unfinished(out, work, force)
    gen = read_generation_config(cfg.model)
    if cfg.use_model_defaults:
        cfg = replace(cfg, sampling=apply_model_defaults(cfg.sampling, given or set(), gen))
        _refuse_problems(cfg)
    work.mkdir()
    state = RunState(run_id=secrets.token_hex(4), created=time.time(), config=cfg, overwrite=force,
                     generation_config=gen, model_files=model_files(cfg.model))
    save_state(work, state)
    note = generation_config_note(gen, cfg.sampling)
    if note:
        log.write(f"audit generate: {note}\n")
    return _run(out, cfg, rt, state, log)


def _refuse_problems(cfg: RunConfig) -> None:
    problems = cfg.problems()
    if problems:
        raise AuditError("; ".join(problems))


def _clear_unfinished(out: Path, work: Path, force: bool) -> None:
    """Refuse to start over an unfinished run, unless --force: then remove it."""
    if not work.exists():
        return
    if not force:
        raise AuditError(f"an unfinished run is in {work}: continue it with `audit generate --resume {out}` "
                         "or start over with --force", path=str(out))
    check_run_dir(work)  # --force removes an unfinished run, never a user's folder of that name
    shutil.rmtree(work)


def resume(out: Path, rt: Runtime, *, servers: tuple[str, ...] = (), log: IO[str] | None = None) -> Manifest:
    """Continue the unfinished run of package `out` from its journal."""
    log = log or sys.stderr
    out = Path(out)
    work = work_dir(out)
    if not work.is_dir():
        if out.exists():
            raise AuditError("is already finished (no unfinished run beside it)", path=str(out))
        raise AuditError(f"no unfinished run to resume (no {work.name} beside it)", path=str(out))
    state = load_state(work)
    cfg = state.config
    if out.exists():
        with open_package(out) as pkg:
            if pkg.manifest.provenance.extra.get("run_id") == state.run_id:
                shutil.rmtree(work)
                log.write(f"audit generate: {out} was already written; removed its work directory\n")
                return pkg.manifest
        if not state.overwrite:
            raise AuditError("exists and is not this run's package", path=str(out))
    if servers:
        if cfg.launch:
            raise AuditError("this run launches its own server; --server cannot replace it")
        state.server_override = list(servers)
    return _run(out, cfg, rt, state, log)


def _run(out: Path, cfg: RunConfig, rt: Runtime, state: RunState, log: IO[str]) -> Manifest:
    # Ctrl-C, `kill -INT` (also when SIGINT was inherited ignored, as by a background job) and SIGTERM
    # (`timeout`, a scheduler) stop the run alike: the server is stopped, the journal kept.
    with procs.stop_signals_interrupt():
        return _run_locked(out, cfg, rt, state, log)


def _run_locked(out: Path, cfg: RunConfig, rt: Runtime, state: RunState, log: IO[str]) -> Manifest:
    work = work_dir(out)
    lock = lock_run(work)
    template = prompt_for(cfg.benchmark, cfg.prompt)
    servers = Servers(cfg, rt, state, work, log)
    journal: Journal | None = None
    try:
        items = load_items(cfg, template, state)
        journal_path = work / "journal.jsonl"
        done = _journal_rows(journal_path, items, log)
        journal = Journal(journal_path)
        _generate(out, work, cfg, rt, state, items, servers, journal, done, log)
        journal.close()
        journal = None
        rows = ordered_rows(done, items)
        prov = build_provenance(cfg, state, template, rows, log_checked=bool(servers.watchers),
                                context_window=servers.context_window)
        return write_package(out, work, cfg, state, prov, rows, items)
    except AuditError:
        if work.exists():
            log.write(f"audit generate: the rows done so far are kept in {work}\n")
        raise
    finally:
        if journal is not None:
            journal.close()
        lock.close()


def _journal_rows(path: Path, items: RunItems, log: IO[str]) -> dict[RowKey, ResponseRow]:
    """The rows an earlier session kept (a torn last line cut off), all of them for this run's items."""
    rows = read_journal(path, repair=True)
    done = rows_by_key(rows, path)
    unknown = {k[0] for k in done} - set(items.index)
    if unknown:
        raise AuditError(f"the journal has rows for items not in this run: {sorted(unknown)[:5]}", path=str(path))
    if rows:
        log.write(f"audit generate: resuming with {len(done)} rows already done\n")
    return done


def _generate(out: Path, work: Path, cfg: RunConfig, rt: Runtime, state: RunState, items: RunItems,
              servers: Servers, journal: Journal, done: dict[RowKey, ResponseRow], log: IO[str]) -> None:
    """Send rounds of requests until the plan is empty; the servers are stopped however it ends."""
    label, tasks = plan(cfg, items, done)
    if not tasks:
        return
    stop_event = threading.Event()
    requester = Requester(cfg, rt, state.run_id, items, servers, stop_event)
    try:
        servers.connect()
        while tasks:
            Round(requester, servers, journal, done, log).run(label, tasks, rt.progress, rt.concurrency)
            label, tasks = plan(cfg, items, done)
    except KeyboardInterrupt:
        stop_event.set()
        log.write(f"\naudit generate: interrupted; {len(done)} rows are kept in {work}; continue with "
                  f"`audit generate --resume {out}`\n")
        raise
    except BaseException:
        stop_event.set()
        raise
    finally:
        servers.stop()

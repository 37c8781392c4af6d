"""`audit judge RESPONSES --items ITEMS --judge NAME[@V] --server URL -o CALLS`: call a judge on every response
and record each call as a row of a `judge-calls` package.

The run works in `CALLS.work/`: `run.json` (the run's configuration, so a resumed run must be the same run) and
`calls.jsonl`, the journal (each finished call appended and fsync'd; a kill loses at most the call being
written). Run again to resume: journaled calls are kept, calls that errored are made again, the rest are made.
When every call has a row, the package is written atomically and the work folder removed.

`--repeats K` calls the judge K times on each response (seeds `seed`, `seed + 1`, ... when `--seed` is given;
none sent otherwise); the flip rate across repeats measures the judge's agreement with itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from audit.errors import AuditError
from audit.fileio import dumps, write_atomic
from audit.generate.openai_http import OpenAIServer, ServerError
from audit.judge.client import CallResult, call_judge
from audit.judge.models import ChatMessage, ComponentKey, JudgeCallRow, call_key
from audit.judge.rules import ParseRule, Reply
from audit.judge.templates import JudgeInput, JudgeTemplate
from audit.models import ItemRow, ResponseRow, Subject

CallKey = tuple[str, int, int, int, int]


@dataclass(frozen=True)
class JudgeRunConfig:
    """Everything that decides which calls are made and how: a resumed run must match it."""

    template: str
    """Judge template `name@version`."""
    rule: str
    """Parse rule `name@version`."""
    model: str
    """The judge model as requested."""
    repeats: int = 1
    seed: int | None = None
    sampling: dict[str, Any] = field(default_factory=dict)
    """Overrides of the template's sampling (None removes a key)."""
    logprobs: int | None = None
    """Top logprobs asked for per token (None: none)."""
    answer_extractor: str | None = None
    """Extractor reading the answer a template compares (simple-evals)."""
    responses_digest: str = ""
    items_digest: str = ""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key_of(template: JudgeTemplate | ParseRule) -> ComponentKey:
    return ComponentKey(name=template.name, version=template.version, fingerprint=template.fingerprint)


@dataclass
class CallTask:
    """One call to make."""

    key: CallKey
    body: dict[str, Any]
    messages: list[dict[str, str]]
    response_sha256: str
    protected: bool


def plan_calls(responses: list[ResponseRow], items: dict[str, ItemRow], template: JudgeTemplate,
               cfg: JudgeRunConfig, extract: Callable[[str, str | None], str | None] | None = None) -> list[CallTask]:
    """Every call of the run, in key order: each response with text, `cfg.repeats` times."""
    tasks = []
    for r in sorted(responses, key=lambda r: (r.item_id, r.sample, r.attempt)):
        if r.response is None:
            continue
        item = items.get(r.item_id)
        if item is None:
            raise AuditError(f"response row for item {r.item_id!r}, which the items do not hold", field="item_id")
        if not item.question:
            raise AuditError(f"item {r.item_id!r} has no question text, which the judge prompt needs", field="question")
        answer = extract(r.response, r.finish_reason) if template.needs_answer and extract is not None else None
        messages = template.render(JudgeInput(question=item.question, response=r.response,
                                              reference=item.reference, answer=answer))
        for k in range(cfg.repeats):
            overrides: dict[str, Any] = dict(cfg.sampling)
            if cfg.seed is not None:
                overrides["seed"] = cfg.seed + k
            if cfg.logprobs is not None:
                overrides.update(logprobs=True, top_logprobs=cfg.logprobs)
            body = template.body(messages, cfg.model, overrides)
            tasks.append(CallTask((r.item_id, r.sample, r.attempt, k, 0), body, messages, _sha(r.response),
                                  item.protected))
    return tasks


def call_row(task: CallTask, result: CallResult, template: JudgeTemplate, rule: ParseRule,
             revision: str | None) -> JudgeCallRow:
    """The row recording one call and what `rule` read from its reply."""
    body = task.body
    if result.error is not None:
        status, reason, parsed = "judge_error", "the call failed", None
    else:
        p = rule.parse(Reply(result.raw, result.logprobs))
        status, reason, parsed = p.status, p.reason, p.parsed
    item, sample, attempt, repeat, position = task.key
    return JudgeCallRow(
        item_id=item, sample=sample, attempt=attempt, repeat=repeat, position=position,
        response_sha256=task.response_sha256, template=key_of(template),
        prompt_sha256=_sha(dumps(task.messages)), messages=[ChatMessage(**m) for m in task.messages],
        response_format=body.get("response_format"), model_requested=body["model"],
        model_served=result.model_served, model_revision=revision,
        temperature=body.get("temperature"), top_p=body.get("top_p"), seed=body.get("seed"),
        max_tokens=body.get("max_completion_tokens", body.get("max_tokens")),
        raw=result.raw, raw_sha256=None if result.raw is None else _sha(result.raw), logprobs=result.logprobs,
        finish_reason=result.finish_reason, prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens, started_at=round(result.started_at, 3),
        latency_s=round(result.latency_s, 3), retries=result.retries, error=result.error, rule=key_of(rule),
        parsed=parsed, status=status, reason=reason, protected=task.protected,  # type: ignore[arg-type]
        extra={"transient_errors": result.errors} if result.errors else {})


class CallJournal:
    """Judge call rows appended one write at a time and fsync'd."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def append(self, row: JudgeCallRow) -> None:
        from audit.packages import row_to_json

        data = (dumps(row_to_json(row)) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, data)
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_call_journal(path: Path) -> dict[CallKey, JudgeCallRow]:
    """The journal's rows by key (a later row of a key replaces an earlier one); a torn last line is dropped."""
    if not path.exists():
        return {}
    data = path.read_bytes()
    lines = data.split(b"\n")
    if data and not data.endswith(b"\n"):
        lines = lines[:-1]  # torn by a kill mid-write
    out: dict[CallKey, JudgeCallRow] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = JudgeCallRow.model_validate(json.loads(line))
        except (json.JSONDecodeError, UnicodeDecodeError, pydantic.ValidationError) as e:
            raise AuditError(f"journal row is not a judge call: {str(e).splitlines()[0]}", path=str(path),
                             row=n) from None
        out[call_key(row)] = row
    return out


def served_revision(server: OpenAIServer, model: str) -> str | None:
    """The served model's `root` from `/v1/models` (its path or revision), when the server reports it."""
    try:
        cards = server.models()
    except ServerError:
        return None
    for card in cards:
        if card.get("id") == model and isinstance(card.get("root"), str):
            return str(card["root"])
    return None


@dataclass
class RunOutcome:
    """What a run left: every row, and how many calls it made now."""

    rows: list[JudgeCallRow]
    called: int
    kept: int


def run_calls(work: Path, cfg: JudgeRunConfig, tasks: list[CallTask], template: JudgeTemplate, rule: ParseRule,
              server: OpenAIServer, *, concurrency: int = 4, retries: int = 2,
              progress: Callable[[int, int], None] | None = None) -> RunOutcome:
    """Make every call not yet journaled in `work` (resuming), and return all rows in key order."""
    work.mkdir(parents=True, exist_ok=True)
    run_json = work / "run.json"
    wanted = dumps(asdict(cfg))
    if run_json.exists():
        recorded = run_json.read_text(encoding="utf-8")
        if recorded != wanted:
            old, new = json.loads(recorded), json.loads(wanted)
            first = next((k for k in new if old.get(k) != new.get(k)), "?")
            raise AuditError(f"holds a judge run with another configuration ({first} differs): give --force to "
                             f"start over", path=str(work))
    else:
        write_atomic(run_json, wanted)
    done = read_call_journal(work / "calls.jsonl")
    todo = [t for t in tasks if t.key not in done or done[t.key].error is not None]
    kept = len(tasks) - len(todo)
    revision = served_revision(server, cfg.model) if todo else None
    journal = CallJournal(work / "calls.jsonl")
    finished = [0]
    lock = threading.Lock()

    def one(task: CallTask) -> None:
        row = call_row(task, call_judge(server, task.body, retries=retries), template, rule, revision)
        journal.append(row)
        with lock:
            done[task.key] = row
            finished[0] += 1
            if progress is not None:
                progress(finished[0], len(todo))

    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            list(pool.map(one, todo))
    finally:
        journal.close()
    wanted_keys = {t.key for t in tasks}
    rows = [done[k] for k in sorted(done) if k in wanted_keys]
    return RunOutcome(rows, len(todo), kept)


def finish(work: Path) -> None:
    """Remove the work folder once the package is written."""
    shutil.rmtree(work, ignore_errors=True)


@dataclass
class JudgeOutcome:
    """A finished `audit judge --server` run: the package written and what the run did."""

    manifest: Any
    rows: list[JudgeCallRow]
    called: int
    kept: int


def _ref(pkg: Any, out_dir: Path) -> dict[str, Any]:
    rel = os.path.relpath(pkg.source.resolve(), out_dir)
    return {"package_id": pkg.manifest.package_id, "digest": pkg.digest, "path": Path(rel).as_posix()}


def judge_responses(responses: str | os.PathLike[str], out: str | os.PathLike[str], *, template: str, server: str,
                    items: str | os.PathLike[str] | None = None, rule: str | None = None, model: str | None = None,
                    repeats: int = 1, seed: int | None = None, sampling: dict[str, Any] | None = None,
                    logprobs: int | None = None, answer_extractor: str | None = None, concurrency: int = 4,
                    deadline_s: float = 600.0, retries: int = 2, force: bool = False,
                    progress: Callable[[int, int], None] | None = None, subject: Subject | None = None
                    ) -> JudgeOutcome:
    """Judge every response of `responses` with `template` on the server at `server`; write the calls to `out`.

    `subject` names the judge served (model, config digest, engine, hardware, random or published weights)."""
    from audit import extractors
    from audit.judge import rules as rules_mod
    from audit.judge import templates as templates_mod
    from audit.judge.kind import JudgeCallsExtra, write_calls
    from audit.models import Provenance
    from audit.outputs import check_output
    from audit.packages import open_package

    out = Path(out)
    work = out.parent / (out.name + ".work")
    check_output(out, force=force)
    if force and work.exists():
        shutil.rmtree(work)
    t = templates_mod.get(template)
    t.prompt()  # the prompt bytes checked before any call
    r = rules_mod.get(rule or t.default_rule)
    out_dir = out.resolve().parent
    with open_package(responses, kind="responses") as rp:
        rows = list(rp.iter_rows("response_row.v1"))
        benchmark = rp.manifest.benchmark
        resp_ref = _ref(rp, out_dir)
        own_items = {it.item_id: it for it in rp.iter_rows("item_row.v1")} if rp.files("item_row.v1") else None
    if items is not None:
        with open_package(items, kind="items") as ip:
            item_rows = {it.item_id: it for it in ip.iter_rows("item_row.v1")}
            items_ref = _ref(ip, out_dir)
    elif own_items is not None:
        item_rows, items_ref = own_items, resp_ref
    else:
        raise AuditError("holds no items: give --items ITEMS_PACKAGE", path=str(responses))
    srv = OpenAIServer(server, timeout=min(deadline_s, 120.0), deadline=deadline_s)
    if model is None:
        try:
            cards = srv.models()
        except ServerError as e:
            raise AuditError(f"cannot list the server's models ({e}): give --judge-model NAME", path=server) from None
        if len(cards) != 1:
            raise AuditError(f"the server serves {len(cards)} models: give --judge-model NAME", path=server)
        model = str(cards[0]["id"])
    ex = extractors.get(answer_extractor or "math.final") if t.needs_answer else None
    cfg = JudgeRunConfig(template=t.key, rule=r.key, model=model, repeats=repeats, seed=seed,
                         sampling=dict(sampling or {}), logprobs=logprobs,
                         answer_extractor=None if ex is None else ex.key, responses_digest=resp_ref["digest"],
                         items_digest=items_ref["digest"])

    def extract(text: str, finish: str | None) -> str | None:
        assert ex is not None
        answer: str | None = ex.extract(text, finish_reason=finish).answer
        return answer

    tasks = plan_calls(rows, item_rows, t, cfg, extract if ex is not None else None)
    done = run_calls(work, cfg, tasks, t, r, srv, concurrency=concurrency, retries=retries, progress=progress)
    extra = JudgeCallsExtra(responses_package=resp_ref, items_package=items_ref, template=t.key, rule=r.key,
                            config=asdict(cfg), server={"url": srv.url, "revision": served_revision(srv, model)},
                            questions=len(item_rows))
    engine = "openai-compatible server" if subject is None else f"{subject.engine}=={subject.engine_version}"
    prov = Provenance(model=model, engine=engine, sampling=dict(sampling or {}) or None,
                      source=f"audit judge --judge {t.key}", extra=extra.model_dump(exclude_none=True),
                      subject=subject)
    manifest = write_calls(str(out), done.rows, benchmark=benchmark, provenance=prov, overwrite=force)
    finish(work)
    return JudgeOutcome(manifest, done.rows, done.called, done.kept)

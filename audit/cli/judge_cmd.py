"""Commands on graders and judges: `audit judge` (grade answer/reference pairs, cross-check two graders, or
call an LLM judge on a responses package and record every call), `audit graders` and `audit judges` (list the
registered versions)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import click

from audit.cli.app import cli
from audit.cli.import_cmd import mapping_options
from audit.errors import AuditError
from audit.fileio import dumps, iter_raw_lines, open_binary, parse_object
from audit.subject import args_from, resolve_subject, subject_options

if TYPE_CHECKING:
    from audit import graders
    from audit.models import Subject


FIELDS = ("id", "answer", "reference", "num_choices")


class _Where(TypedDict):
    """The place of a row in its file, as AuditError takes it."""

    path: str
    row: int


def _load_rows(path: Path, rmap: Any = None) -> list[dict[str, Any]]:
    """Every row of FILE.jsonl checked before anything is graded: {id, answer, reference[, num_choices]}
    (with `rmap`, `--map` / `--where`: the mapped fields of the selected rows)."""
    rows: list[dict[str, Any]] = []
    seen: dict[Any, int] = {}
    try:
        fh = open_binary(path)
    except OSError as e:
        raise AuditError(f"cannot read: {e.strerror or e}", path=str(path)) from None
    with fh:
        for raw in iter_raw_lines(fh):
            where: _Where = {"path": str(path), "row": raw.lineno}
            if raw.data is None:  # unreadable: error says why
                raise AuditError(raw.error or "unreadable line", **where)
            obj, err = parse_object(raw.data)
            if err:
                raise AuditError(err, **where)
            assert obj is not None  # parse_object gives an object or an error
            if rmap:
                if not rmap.selected(obj, str(path), raw.lineno):
                    continue
                mapped = rmap.apply(obj, str(path), raw.lineno)
                obj = {k: mapped[k] for k in FIELDS if k in mapped}
            for name in ("id", "reference"):
                if name not in obj:
                    raise AuditError("missing", field=name, **where)
            extra = sorted(set(obj) - {"id", "answer", "reference", "num_choices"})
            if extra:
                raise AuditError("unknown field (expected id, answer, reference, num_choices)", field=extra[0],
                                 **where)
            rid = obj["id"]
            if isinstance(rid, bool) or not isinstance(rid, (str, int)):
                raise AuditError("expected a string or an integer", field="id", **where)
            if rid in seen:
                raise AuditError(f"duplicate id {rid!r} (first on line {seen[rid]})", field="id", **where)
            seen[rid] = raw.lineno
            answer = obj.get("answer")
            if answer is not None and not isinstance(answer, str):
                raise AuditError("expected a string or null", field="answer", **where)
            if not isinstance(obj["reference"], str):
                raise AuditError("expected a string", field="reference", **where)
            nc = obj.get("num_choices")
            if nc is not None and (isinstance(nc, bool) or not isinstance(nc, int) or not 1 <= nc <= 26):
                raise AuditError("expected an integer from 1 to 26 or null", field="num_choices", **where)
            rows.append({"id": rid, "answer": answer, "reference": obj["reference"], "num_choices": nc})
    return rows


def _judgments(g: graders.Grader, rows: list[dict[str, Any]], workers: int | None,
              budget: float | None) -> list[graders.Judgment]:
    from audit import graders
    from audit.graders.budget import WorkerStartError

    try:
        return graders.grade_many(g, rows, workers=workers, budget_s=budget)
    except WorkerStartError as e:
        raise AuditError(f"{g.key}: {e}") from None


def _as_obj(v: graders.Judgment) -> dict[str, Any]:
    return {"correct": v.correct, "status": v.status, "reason": v.reason}


def judge_options(f: Any) -> Any:
    """The options of `audit judge --judge` (an LLM judge over an OpenAI-compatible server)."""
    opts = [
        click.option("--items", type=click.Path(path_type=Path), metavar="ITEMS",
                     help="Items package with the questions and gold answers (default: the responses package's)."),
        click.option("--server", metavar="URL", help="OpenAI-compatible server (a local vLLM or a remote endpoint)."),
        click.option("-o", "--output", type=click.Path(path_type=Path), metavar="CALLS",
                     help="judge-calls package to write."),
        click.option("--judge-model", metavar="NAME", help="Model to ask for (default: the server's only model)."),
        click.option("--judge-rule", metavar="NAME[@VERSION]", help="Parse rule (default: the template's upstream's)."),
        click.option("--repeats", type=click.IntRange(1, 100), metavar="K",
                     help="Calls per response (default 1): the flip rate across them measures the judge's "
                          "self-agreement."),
        click.option("--seed", type=int, metavar="N", help="Seed of repeat 0 (repeat k sends N + k); none sent "
                     "without it."),
        click.option("--temperature", type=float, help="Override the template's temperature."),
        click.option("--top-p", type=float, help="Send top_p."),
        click.option("--max-tokens", type=click.IntRange(1), metavar="N", help="Override the output ceiling."),
        click.option("--logprobs", type=click.IntRange(0, 20), metavar="N", help="Record N top logprobs per token."),
        click.option("--extractor", metavar="NAME[@VERSION]",
                     help="Extractor reading the answer a template compares (simple-evals; default math.final)."),
        click.option("--concurrency", type=click.IntRange(1, 256), metavar="N", help="Calls in flight (default 4)."),
        click.option("--timeout", type=click.FloatRange(min=0.1), metavar="SECONDS",
                     help="Deadline of one call: connect, headers and the whole reply (default 600)."),
        click.option("--retries", type=click.IntRange(0, 10), help="Retries of a transient failure (default 2)."),
        click.option("--force", is_flag=True, help="Replace CALLS (and start over from an old CALLS.work/)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    # the judge served: optional (a remote endpoint's weights cannot be named), all of it or none
    return subject_options()(f)


def _run_llm_judge(responses: Path, judge_spec: str, *, items: Path | None, server: str | None,
                   output: Path | None, judge_model: str | None, judge_rule: str | None, repeats: int | None,
                   seed: int | None, temperature: float | None, top_p: float | None, max_tokens: int | None,
                   logprobs: int | None, extractor: str | None, concurrency: int | None, timeout: float | None,
                   retries: int | None, force: bool, subject: Subject | None = None) -> int:
    from collections import Counter

    from audit.judge import figures, templates
    from audit.judge.run import judge_responses

    if server is None or output is None:
        raise click.UsageError("--judge needs --server URL and -o CALLS")
    t = templates.get(judge_spec)
    repeats = repeats or 1
    sampling: dict[str, Any] = {}
    if temperature is not None:
        sampling["temperature"] = temperature
    if top_p is not None:
        sampling["top_p"] = top_p
    if max_tokens is not None:
        sampling["max_completion_tokens" if "max_completion_tokens" in dict(t.sampling) else "max_tokens"] = max_tokens
    done = judge_responses(responses, output, template=t.key, server=server, items=items, rule=judge_rule,
                           model=judge_model, repeats=repeats, seed=seed, sampling=sampling, logprobs=logprobs,
                           answer_extractor=extractor, concurrency=concurrency or 4, deadline_s=timeout or 600.0,
                           retries=2 if retries is None else retries, force=force, subject=subject)
    statuses = Counter(r.status for r in done.rows)
    click.echo(f"wrote {output}: {len(done.rows):,} calls ({done.called:,} made now, {done.kept:,} kept from "
               f"{output}.work); " + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items())))
    errors = sum(1 for r in done.rows if r.error is not None)
    if errors:
        click.echo(f"  {errors:,} calls failed (status judge_error; run again to retry them)")
    if repeats > 1:
        fr = figures.flip_rates((r.item_id, r.sample, r.attempt, r.status) for r in done.rows)
        click.echo("  flip rate: " + figures.flip_text(fr, f"responses changed verdict across {repeats} repeats"))
        flipped = [k for k, v in fr.per_item.items() if v > 0]
        if flipped:
            shown = ", ".join(f"{k} {100 * fr.per_item[k]:.0f}%" for k in flipped[:10])
            click.echo(f"  items that flipped ({len(flipped):,}): {shown}" + (", ..." if len(flipped) > 10 else ""))
    return 0


@cli.command("judges")
def judges_cmd() -> int:
    """List the registered judge templates and parse rules: name@version, fingerprint, source."""
    from audit.judge import rules, templates

    for t in templates.REGISTRY:
        click.echo(f"template  {t.key:<34} {t.fingerprint[:16]}  {t.description} (rule {t.default_rule})")
    for r in rules.REGISTRY:
        click.echo(f"rule      {r.key:<34} {r.fingerprint[:16]}  {r.description}")
    return 0


@cli.command()
@click.argument("file", type=click.Path(path_type=Path), metavar="FILE|RESPONSES")
@click.option("--grader", "grader_spec", metavar="NAME[@VERSION]",
              help="Grader to apply, e.g. math.equiv or math.hendrycks@985bdc1 (see `audit graders`).")
@click.option("--cross", "cross_specs", metavar="A,B",
              help="Grade with two graders and print only the rows where their judgments differ (exit 1 if any).")
@click.option("--judge", "judge_spec", metavar="NAME[@VERSION]",
              help="Call an LLM judge with this template on the responses package RESPONSES (see `audit judges`).")
@click.option("--workers", type=click.IntRange(min=1), metavar="N",
              help="Worker processes for symbolic graders (default: the CPUs available).")
@click.option("--budget", type=click.FloatRange(min=0.01), metavar="SECONDS",
              help="Per-item time budget (default: the grader's own, 5 s); an item over it is retried alone under "
                   "4x the budget, and over that too the judgment is timeout.")
@mapping_options
@judge_options
def judge(file: Path, grader_spec: str | None, cross_specs: str | None, judge_spec: str | None,
          workers: int | None, budget: float | None, maps: tuple[str, ...], where: tuple[str, ...],
          **judge_kw: Any) -> int:
    """Grade answer/reference pairs from FILE (JSONL rows {id, answer, reference[, num_choices]}), or, with
    --judge, call an LLM judge on every response of the package RESPONSES.

    With --grader, prints one JSONL line per row: {id, correct, status, reason}, in input
    order. With --cross A,B, prints one line per row where the two graders' `correct` differs:
    {id, answer, reference, A: {correct, status, reason}, B: {...}}, then a count on stderr;
    exit 1 when any row differs, 0 when none. Every row is checked before grading: a bad row
    is one error line naming the file, line and field, with exit 2 and nothing printed.
    --map and --where read rows written another way.

    With --judge TEMPLATE --server URL -o CALLS, every call (request, model as served, sampling, raw reply,
    usage, errors, the parse rule's reading) is a row of the judge-calls package CALLS; a killed run resumes from
    CALLS.work/. `audit grade --judge-calls CALLS` then grades from the recorded calls without a server.
    """
    if judge_spec is not None:
        if grader_spec or cross_specs or workers or budget or maps or where:
            raise click.UsageError("--judge calls an LLM judge: --grader, --cross, --workers, --budget, --map and "
                                   "--where grade answer/reference files")
        subject = resolve_subject(args_from(judge_kw), what="judge-calls", gpu_evidence=False)
        return _run_llm_judge(file, judge_spec, **judge_kw, subject=subject)
    subject_flags = args_from(judge_kw).given()
    if subject_flags:
        raise click.UsageError(f"{subject_flags[0]} needs --judge TEMPLATE")
    given = [k for k, v in judge_kw.items() if v is not None and v is not False]
    if given:
        raise click.UsageError(f"--{given[0].replace('_', '-')} needs --judge TEMPLATE")
    if file.is_dir():
        raise click.BadParameter(f"File {str(file)!r} is a directory.", param_hint="'FILE'")
    from audit.importers.mapping import RecordMap
    from audit.specs import lookup

    rmap = RecordMap.parse(maps, where, fields=FIELDS)

    if (grader_spec is None) == (cross_specs is None):
        raise click.UsageError("give exactly one of --grader NAME, --cross A,B or --judge TEMPLATE")
    if grader_spec is not None:
        g = lookup("grader", grader_spec)
        rows = _load_rows(file, rmap)
        for row, v in zip(rows, _judgments(g, rows, workers, budget), strict=True):
            click.echo(dumps({"id": row["id"], **_as_obj(v)}))
        return 0
    assert cross_specs is not None  # exactly one of the two was given
    specs = [s.strip() for s in cross_specs.split(",")]
    if len(specs) != 2 or not all(specs):
        raise click.UsageError("--cross takes two graders separated by a comma, e.g. math.equiv,math.mathverify")
    ga, gb = lookup("grader", specs[0]), lookup("grader", specs[1])
    if ga.key == gb.key:
        raise click.UsageError(f"--cross needs two different graders, got {ga.key} twice")
    rows = _load_rows(file, rmap)
    va, vb = _judgments(ga, rows, workers, budget), _judgments(gb, rows, workers, budget)
    differ = 0
    for row, a, b in zip(rows, va, vb, strict=True):
        if a.correct is b.correct:
            continue
        differ += 1
        click.echo(dumps({"id": row["id"], "answer": row["answer"], "reference": row["reference"],
                          ga.key: _as_obj(a), gb.key: _as_obj(b)}))
    click.echo(f"{differ} of {len(rows)} rows differ between {ga.key} and {gb.key}", err=True)
    return 1 if differ else 0


@cli.command("graders")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per grader instead of a table.")
def graders_cmd(as_json: bool) -> int:
    """List the registered graders: name@version, fingerprint, description."""
    from audit import graders

    entries = sorted(graders.all_graders(), key=lambda g: (g.name, g.version))
    if as_json:
        for g in entries:
            click.echo(dumps({"name": g.name, "version": g.version, "fingerprint": g.fingerprint,
                              "source": g.source, "description": g.description}))
        return 0
    width = max(len(g.key) for g in entries)
    for g in entries:
        click.echo(f"{g.key:<{width}}  {g.fingerprint[:16]}  {g.description}")
    return 0

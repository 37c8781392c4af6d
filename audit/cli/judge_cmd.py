"""Commands on graders: `audit judge` (grade answer/reference pairs, or cross-check two graders)
and `audit graders` (list the registered versions)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import click

from audit.cli.app import cli
from audit.cli.import_cmd import mapping_options
from audit.errors import AuditError
from audit.fileio import dumps, iter_raw_lines, open_binary, parse_object

if TYPE_CHECKING:
    from audit import graders


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


@cli.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--grader", "grader_spec", metavar="NAME[@VERSION]",
              help="Grader to apply, e.g. math.equiv or math.hendrycks@985bdc1 (see `audit graders`).")
@click.option("--cross", "cross_specs", metavar="A,B",
              help="Grade with two graders and print only the rows where their judgments differ (exit 1 if any).")
@click.option("--workers", type=click.IntRange(min=1), metavar="N",
              help="Worker processes for symbolic graders (default: the CPUs available).")
@click.option("--budget", type=click.FloatRange(min=0.01), metavar="SECONDS",
              help="Per-item time budget (default: the grader's own, 5 s); an item over it is retried alone under "
                   "4x the budget, and over that too the judgment is timeout.")
@mapping_options
def judge(file: Path, grader_spec: str | None, cross_specs: str | None, workers: int | None,
          budget: float | None, maps: tuple[str, ...], where: tuple[str, ...]) -> int:
    """Grade answer/reference pairs from FILE (JSONL rows {id, answer, reference[, num_choices]}).

    With --grader, prints one JSONL line per row: {id, correct, status, reason}, in input
    order. With --cross A,B, prints one line per row where the two graders' `correct` differs:
    {id, answer, reference, A: {correct, status, reason}, B: {...}}, then a count on stderr;
    exit 1 when any row differs, 0 when none. Every row is checked before grading: a bad row
    is one error line naming the file, line and field, with exit 2 and nothing printed.
    --map and --where read rows written another way.
    """
    from audit.importers.mapping import RecordMap
    from audit.specs import lookup

    rmap = RecordMap.parse(maps, where, fields=FIELDS)

    if (grader_spec is None) == (cross_specs is None):
        raise click.UsageError("give exactly one of --grader NAME or --cross A,B")
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

"""Commands on answer extractors: extract, extractors, lock."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from audit.cli.app import cli
from audit.cli.import_cmd import mapping_options
from audit.errors import AuditError, Problem, ValidationFailed
from audit.fileio import dumps, jsonl_source

MAX_PROBLEMS_SHOWN = 20


class BadRows(ValidationFailed):
    """Rows of an input file that cannot be read; nothing was written. Exit code 2."""

    exit_code = 2


def _row_problems(path: str, lineno: int, obj: dict[str, Any]) -> list[Problem]:
    problems = []
    item_id = obj.get("item_id")
    if "item_id" not in obj:
        problems.append(Problem(path, "missing", lineno, "item_id"))
    elif not isinstance(item_id, str) or not item_id:
        problems.append(Problem(path, f"expected a non-empty string, found {_kind(item_id)}", lineno, "item_id"))
    sample = obj.get("sample", 0)
    if not isinstance(sample, int) or isinstance(sample, bool) or sample < 0:
        problems.append(Problem(path, f"expected an integer >= 0, found {_kind(sample)}", lineno, "sample"))
    if "response" not in obj:
        problems.append(Problem(path, "missing (use null for no response)", lineno, "response"))
    elif obj["response"] is not None and not isinstance(obj["response"], str):
        problems.append(Problem(path, f"expected a string or null, found {_kind(obj['response'])}", lineno, "response"))
    fr = obj.get("finish_reason")
    if fr is not None and not isinstance(fr, str):
        problems.append(Problem(path, f"expected a string or null, found {_kind(fr)}", lineno, "finish_reason"))
    return problems


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    return {"list": "an array", "dict": "an object"}.get(type(value).__name__, type(value).__name__)


def _source(path: Path, rmap: Any = None) -> Any:
    from audit.importers.mapping import mapped_rows

    return mapped_rows(jsonl_source(path), rmap)


def _check_file(path: Path, rmap: Any = None) -> int:
    """Validate every row first, so that a bad row leaves stdout empty. Returns the row count."""
    problems: list[Problem] = []
    rows = 0
    for src in _source(path, rmap):
        rows += 1
        if src.error:
            problems.append(Problem(src.path, src.error, src.row))
        else:
            problems.extend(_row_problems(src.path, src.row, src.obj))
    if problems:
        shown = problems[:MAX_PROBLEMS_SHOWN]
        if len(problems) > len(shown):
            shown.append(Problem(str(path), f"{len(problems) - len(shown)} more problems not shown"))
        raise BadRows(str(path), shown)
    return rows


@cli.command("extract")
@click.option("--extractor", "spec", required=True, metavar="NAME[@VERSION]",
              help="Registered extractor (see `audit extractors`); without @VERSION, its latest version.")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@mapping_options
def extract_cmd(spec: str, file: Path, maps: tuple[str, ...], where: tuple[str, ...]) -> int:
    """Extract an answer from each response of FILE.jsonl; write JSONL to stdout.

    Input rows: {item_id, sample, response, finish_reason?}; other fields are ignored.
    `sample` defaults to 0; `response` may be null. Output rows, in input order:
    {item_id, sample, answer, rule, span}, where `answer` is null when nothing was
    found, `rule` names the step that fired (or why none did) and `span` gives
    [start, end) character offsets of the evidence in the response, or null.
    Every row is checked before anything is written. The extractor's name@version
    and fingerprint are printed to stderr. --map and --where read rows written another way.
    """
    from audit.importers.mapping import RecordMap
    from audit.specs import lookup

    ex = lookup("extractor", spec)
    if not file.is_file():
        raise AuditError("no such file", path=str(file))
    rmap = RecordMap.parse(maps, where, fields=("item_id", "sample", "response", "finish_reason"))
    n = _check_file(file, rmap)
    out = sys.stdout
    found = 0
    for src in _source(file, rmap):
        obj = src.obj
        got = ex.extract(obj["response"], finish_reason=obj.get("finish_reason"))
        found += got.answer is not None
        out.write(dumps({"item_id": obj["item_id"], "sample": obj.get("sample", 0), "answer": got.answer,
                         "rule": got.rule, "span": list(got.span) if got.span else None}))
        out.write("\n")
    out.flush()
    click.echo(f"{ex.key} (fingerprint {ex.fingerprint[:12]}): {found} answers from {n} rows", err=True)
    return 0


@cli.command("extractors")
def extractors_cmd() -> int:
    """List registered extractors: name, version, fingerprint (first 12 hex digits), description."""
    from audit import extractors

    entries = sorted(extractors.all_extractors(), key=lambda e: (e.name, e.version))
    wn = max([len("NAME")] + [len(e.name) for e in entries])
    wv = max([len("VERSION")] + [len(e.version) for e in entries])
    click.echo(f"{'NAME':<{wn}}  {'VERSION':<{wv}}  {'FINGERPRINT':<12}  DESCRIPTION")
    for e in entries:
        click.echo(f"{e.name:<{wn}}  {e.version:<{wv}}  {e.fingerprint[:12]}  {e.description}")
    return 0


@cli.command("lock")
@click.option("--update", "mode", flag_value="update",
              help="Lock new versions and record missing behaviour digests; never rewrites an entry.")
@click.option("--check", "mode", flag_value="check", default=True,
              help="Exit 1 if a registered version's fingerprint is not accepted by its lock file (default).")
@click.option("--behaviour", is_flag=True,
              help="Also recompute every behaviour digest on the real data (slow; needs ../shared/data).")
@click.option("--migrate", "migrate_keys", multiple=True, metavar="NAME@VER",
              help="Accept NAME@VER's new fingerprint if it behaves byte-identically to the locked code "
                   "(repeatable).")
@click.option("--baseline", default="HEAD", show_default=True, metavar="REF",
              help="Git ref holding the locked code, for --migrate.")
def lock_cmd(mode: str, behaviour: bool, migrate_keys: tuple[str, ...], baseline: str) -> int:
    """Check or extend extractors/lock.json and graders/lock.json.

    Each entry lists the code fingerprints accepted for a registered version and the
    digest of its behaviour on the real data. A registered version must never change
    behaviour: when its code changes, the check fails; register a new version instead.
    When only the code's place changed (a module moved or renamed), `--migrate NAME@VER`
    runs the golden rows and the real data through the code at --baseline and through
    the code as it is, and accepts the new fingerprint only when every output is identical.
    """
    from audit import lock

    bad = 0
    if migrate_keys:
        from audit.behaviour import git_baseline

        base = git_baseline(baseline)
        for key in migrate_keys:
            kind = next((k for k in lock.PACKAGES if key in lock.registry_and_lock(k)[0]), None)
            if kind is None or "@" not in key:
                raise AuditError(f"--migrate {key!r}: not a registered extractor or grader name@version")
            registry, path = lock.registry_and_lock(kind)
            click.echo(f"{path.parent.name}/{path.name}: {lock.migrate(registry, path, key, base)}")
    for kind in lock.PACKAGES:
        registry, path = lock.registry_and_lock(kind)
        label = f"{path.parent.name}/{path.name}"
        if mode == "update":
            for change in lock.update(registry, path):
                click.echo(f"{label}: {change}")
        problems = lock.check(registry, path)
        if behaviour:
            problems += lock.check_behaviour(registry, path)
        for p in problems:
            click.echo(f"{label}: {p}")
        if not problems:
            click.echo(f"{label}: {len(registry.keys())} versions in sync"
                       + (", behaviour identical on the real data" if behaviour else ""))
        bad += len(problems)
    return 1 if bad else 0

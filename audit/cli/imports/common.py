"""The `audit import` group and what its commands share: the output options, `--map` / `--where`, the wrong-format
check, one line per kind of problem, and the lines each import prints."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from audit.cli.app import cli
from audit.models import Manifest, Provenance

F = TypeVar("F", bound=Callable[..., Any])


def common_options(f):
    """Options every importer shares: where to write and what to record."""
    options = [
        click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, metavar="OUT",
                     help="Package directory to write."),
        click.option("--model", metavar="NAME", help="Model name recorded in the provenance."),
        click.option("--provenance", type=click.Path(path_type=Path), metavar="P.json",
                     help="Provenance JSON (model, engine, hardware, dataset, sampling); the importer adds "
                          "the source files' sha256 and its configuration."),
        click.option("--id", "package_id", metavar="ID", help="Package id (default: derived from the content)."),
        click.option("--gzip", "use_gzip", is_flag=True, help="Store data files as .jsonl.gz."),
        click.option("--force", is_flag=True, help="Replace existing outputs."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


FORMAT = click.option(
    "--format", "fmt", metavar="EXT",
    help="The file's format when its name does not end in it: the extension it would have (e.g. jsonl, json, csv, "
         "parquet, eval; one the command reads). Default: told by the name.")
"""`--format EXT`, for every import that tells a file's format by its name (`audit.importers.sources.format_name`
applies it; `source_file` refuses an extension the command does not read)."""


def mapping_options(f):
    """`--map` and `--where`, as `import table` has them, for commands that read fixed field names (the
    importers, `audit extract`, `audit judge`)."""
    f = click.option("--where", multiple=True, metavar="COL=VALUE",
                     help="Keep records whose COL equals VALUE (COL!=VALUE: differs); repeat a column for any-of "
                          "(one run of a file holding several).")(f)
    return click.option("--map", "maps", multiple=True, metavar="FIELD=EXPR",
                        help="Read FIELD from another column, or a template like 'q{question_id}'.")(f)



def record_map(maps: tuple[str, ...], where: tuple[str, ...], fields: tuple[str, ...]) -> Any:
    from audit.importers.mapping import RecordMap

    return RecordMap.parse(maps, where, fields=fields)


def check_format(srcs: tuple[Path, ...] | list[Path], importer: str, fmt: str | None = None) -> None:
    """Refuse, in one line, a file that another command reads (an lm-eval file given to mmlu-pro, a verdict file
    given to table, ...), naming what it looks like and the command to use; `fmt`: `--format`."""
    from audit.errors import AuditError
    from audit.importers.detect import wrong_importer

    for src in srcs:
        found = wrong_importer(src, importer, fmt)
        if found is not None:
            raise AuditError(found.message(src, fmt), path=str(src))


@contextmanager
def collapsed_problems(srcs: tuple[Path, ...] | list[Path] = (), *, hint: bool = False,
                       fmt: str | None = None) -> Iterator[None]:
    """One line per kind of problem: the same field missing on every row is said once, with a count.

    With `hint`, a failed import of a file that a dedicated command reads says which (a table
    mapping that forgot the columns of an MMLU-Pro file, say).
    """
    from audit.errors import AuditError, Problem, ValidationFailed
    from audit.importers.detect import TABLE, sniff

    def hint_for() -> str | None:
        for src in srcs:
            found = sniff(src, fmt)
            if found is not None and found is not TABLE and found.importer != "table":
                return found.message(src, fmt)
        return None

    try:
        yield
    except ValidationFailed as e:
        collapsed: list[Problem] = []
        repeats: list[int] = []
        for pr in e.problems:
            last = collapsed[-1] if collapsed else None
            if last is not None and (last.path, last.field, last.message) == (pr.path, pr.field, pr.message):
                repeats[-1] += 1
                continue
            collapsed.append(pr)
            repeats.append(0)
        problems = [Problem(pr.path, pr.message + (f" (and {n} more rows with the same problem)" if n else ""),
                            pr.row, pr.field) for pr, n in zip(collapsed, repeats, strict=True)]
        extra = hint_for() if hint else None
        if extra:
            problems[0] = Problem(problems[0].path, f"{problems[0].message}; {extra}", problems[0].row,
                                  problems[0].field)
        # The same class, told shorter: its exit code is the one the library chose for this failure.
        raise type(e)(e.target, problems) from None
    except AuditError as e:
        extra = hint_for() if hint else None
        if not extra:
            raise
        pr = e.problem
        raise AuditError(f"{pr.message}; {extra}", path=pr.path or None, row=pr.row, field=pr.field) from None


def check_recorded(recorded: Path | None, force: bool) -> None:
    from audit.outputs import check_output

    if recorded is not None:
        check_output(recorded, force=force, kind="verdicts")


def write_all(outputs: list, force: bool, recorded: Path | None, write_recorded: Any) -> tuple[list[Manifest], Any]:
    """Write the packages, then the recorded verdict file pinned to the responses package; a failure of the
    latter removes the packages this call wrote, so nothing half-written is left. Returns the manifests and
    what `write_recorded` returned (None without `recorded`)."""
    import os
    import shutil

    from audit.importers import write_outputs

    new = [o.out for o in outputs if not o.out.exists()]
    manifests = write_outputs(outputs, overwrite=force)
    header = None
    if recorded is not None:
        try:
            header = write_recorded(outputs[0].out,
                                    os.path.relpath(outputs[0].out.resolve(), recorded.resolve().parent))
        except BaseException:
            for path in new:
                shutil.rmtree(path, ignore_errors=True)
            raise
    return manifests, header


def write_reported(outputs: list, force: bool, recorded: Path | None, write_recorded: Any,
                    bad_rows: list[dict[str, Any]] | None = None) -> Any:
    """`write_all`, then a line per package written (and each row recorded ungraded); the recorded verdict
    file's header (None without `recorded`)."""
    with collapsed_problems():
        manifests, header = write_all(outputs, force, recorded, write_recorded)
        report(manifests, [o.out for o in outputs], bad_rows)
    return header


def exit_on_mismatch(checks: list[dict[str, Any]], message: str) -> int:
    """1, with `message` on stderr, when a cross-check failed; else 0."""
    if any(c["ok"] is False for c in checks):
        click.echo(message, err=True)
        return 1
    return 0


def report_recorded(recorded: Path, header: Any, benchmark: str, note: str = "", indent: str = "") -> None:
    overall = next(f for f in header.summary.figures if f.name == "accuracy_all")
    click.echo(f"{indent}wrote {recorded}: {benchmark}, {header.summary.items} items x {header.summary.samples} "
               f"samples, recorded accuracy {100 * overall.value:.2f}% ({overall.correct}/{overall.total})" + note)


RECORDED_HELP = ("Also write the verdicts the run itself recorded as a verdict file pinned to OUT, ready for "
                  "`audit diff RECORDED.json REGRADED.json`.")


def recorded_option(each_row: str, folder: str = "") -> Callable[[F], F]:
    """`--recorded RECORDED.json` of an import that can write its run's own verdicts; `each_row` says what a row
    of that verdict file is; `folder`, for a command that also reads folders, what RECORDED is then (a folder)."""
    return click.option("--recorded", type=click.Path(path_type=Path, dir_okay=bool(folder)), metavar="RECORDED.json",
                        help=f"{RECORDED_HELP} Each row: {each_row}" + (f" {folder}" if folder else ""))


def metric_option(default: str) -> Callable[[F], F]:
    """`--metric NAME`: which logged metric is the recorded verdict; `default` says which one is taken without it."""
    return click.option("--metric", metavar="NAME",
                        help=f"With --recorded: the logged metric that is the verdict (default: {default}).")


def start_import(recorded: Path | None, force: bool, provenance: Path | None, *,
                 metric: str | None = None) -> Provenance | None:
    """What every import that writes packages does before it reads its source: `--metric` only with `--recorded`,
    the verdict file's path checked, and the `--provenance` file read (None without one)."""
    from audit.pack import load_provenance

    if metric is not None and recorded is None:
        raise click.UsageError("--metric needs --recorded")
    check_recorded(recorded, force)
    return load_provenance(provenance) if provenance else None


def recorded_writer(recorded: Path | None, rows: Any, *, benchmark: str, tool: str, source: str, force: bool,
                    **fields: Any) -> Callable[[Path, str], Any] | None:
    """`write_all`'s `write_recorded`: the verdict file of `rows` (or of `rows()`, read when it is written), pinned
    to the package it is given; None without `recorded`."""
    if recorded is None:
        return None
    from audit.importers.verdicts import write_recorded

    def write(package: Path, rel: str) -> Any:
        return write_recorded(recorded, rows() if callable(rows) else rows, benchmark=benchmark, tool=tool,
                              source=source, package=package, package_path=rel, overwrite=force, **fields)
    return write


def calls_options(*extra: Callable[[Any], Any]) -> Callable[[F], F]:
    """The options of an import that writes a judge-calls package: `-o CALLS`, the command's own (`extra`),
    `--format` and `--force`."""
    def wrap(f: Any) -> Any:
        for opt in reversed([
                click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, metavar="CALLS",
                             help="judge-calls package to write."),
                *extra,
                FORMAT,
                click.option("--force", is_flag=True, help="Replace CALLS if it exists.")]):
            f = opt(f)
        return f
    return wrap


def write_calls(read: Callable[[], Any], out: Path, *, force: bool, questions: int | None = None) -> int:
    """Check CALLS, read the source (`read()`, an `audit.judge.imports.Imported`), write the judge-calls package and
    say how many calls of each status it holds."""
    from collections import Counter

    from audit.judge.imports import write_imported
    from audit.outputs import check_output

    check_output(out, force=force)
    imp = read()
    write_imported(imp, str(out), questions=questions, force=force)
    statuses = Counter(r.status for r in imp.rows)
    click.echo(f"wrote {out}: {len(imp.rows):,} judge calls from {imp.source.name} ("
               + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items())) + ")")
    return 0


def report(manifests: list[Manifest], outs: list[Path], bad_rows: list[dict[str, Any]] | None = None) -> None:
    for m, out in zip(manifests, outs, strict=True):  # a manifest per output, as write_outputs returns them
        main = "item_row.v1" if m.kind == "items" else "response_row.v1"
        rows = sum(f.rows or 0 for f in m.files if f.schema_ == main)
        items = sum(f.rows or 0 for f in m.files if f.schema_ == "item_row.v1") if main != "item_row.v1" else 0
        note = f" and {items} items" if items else ""
        click.echo(f"wrote {out}: {m.kind} package {m.package_id}, {rows} rows{note}")
    for b in bad_rows or []:
        click.echo(f"  recorded ungraded (bad_input): {b['file']}: row {b['row']}: item {b['item_id']}: {b['reason']}")


@cli.group("import", context_settings={"help_option_names": ["-h", "--help"]})
def import_group() -> None:
    """Build packages from result files other tools wrote.

    Every row is checked against its schema and the source files are recorded by
    sha256; on any problem nothing is written.
    """


ON_BAD_ROW = click.option(
    "--on-bad-row", type=click.Choice(["refuse", "record"]), default="refuse", show_default=True,
    help="A record whose own fields disagree (MMLU-Pro: gold `answer` vs `answer_index`; lm-eval: a target that "
         "names no option): refuse the import, or record it as ungraded with status bad_input and its reason "
         "(listed in the output and the provenance).")

"""`audit import task-runs`: agentic harness outputs into one task-runs package (audit.importers.task_runs)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.imports.common import check_format, common_options, import_group
from audit.pack import load_provenance


@import_group.command("task-runs")
@click.argument("srcs", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="SRC...")
@click.option("--format", "fmt", type=click.Choice(["terminal-bench", "swe-bench", "tau-bench", "table"]),
              help="The sources' format (default: detected from each: a Terminal-Bench run folder, a SWE-bench "
                   "run report or folder of report.json files, a τ-bench results file, a table).")
@click.option("--map", "maps", multiple=True, metavar="FIELD=COLUMN",
              help="(table) Read trial FIELD from COLUMN; a field not mapped is read from the column of its name.")
@click.option("--run-id", metavar="ID", help="The run's id, for a source that names none (one run).")
@click.option("--benchmark", metavar="NAME", help="The benchmark's name, recorded on every run.")
@click.option("--task-count", type=click.IntRange(min=1), metavar="N",
              help="The benchmark's task count: the denominator of every rate (overrides the source's).")
@click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=0), metavar="SECONDS",
              help="The per-task time limit, recorded on every run.")
@click.option("--seed", type=int, help="The seed the runs were given.")
@click.option("--seed-ignored", is_flag=True, help="The agent ignores the seed: repetitions are independent draws.")
@click.option("--workers", type=click.IntRange(min=1), metavar="N",
              help="Trials at once, where the source does not say.")
@click.option("--engine", metavar="NAME", help="Serving engine of every trial, where the source does not say.")
@click.option("--speculative", metavar="WORDS",
              help="Speculative decoding of every trial (e.g. 'mtp k=3', 'none'), where the source does not say.")
@click.option("--exclude", "excludes", multiple=True, metavar="WORD=REASON",
              help="Exclude the unresolved or errored trials whose failure mode is WORD, for REASON (context_overflow, "
                   "time_limit, infrastructure, harness_error, not_submitted), e.g. "
                   "context_length_exceeded=context_overflow; the figures then show both denominator policies.")
@click.option("--on-bad-row", type=click.Choice(["refuse", "record"]), default="refuse", show_default=True,
              help="A record that cannot be a trial (a repeated task/run/attempt, an end before its start, a reward "
                   "outside [0, 1], an unknown outcome word): refuse the import, or leave it out and list it in "
                   "the provenance.")
@common_options
def import_task_runs(srcs: tuple[Path, ...], fmt: str | None, maps: tuple[str, ...], run_id: str | None,
                     benchmark: str | None, task_count: int | None, time_limit_s: float | None, seed: int | None,
                     seed_ignored: bool, workers: int | None, engine: str | None, speculative: str | None,
                     excludes: tuple[str, ...], on_bad_row: str, out: Path, model: str | None,
                     provenance: Path | None, package_id: str | None, use_gzip: bool, force: bool) -> int:
    """Agentic task runs: Terminal-Bench run folders, SWE-bench run reports or report.json folders, τ-bench
    results files, or a table, into one task-runs package (several runs of one system together).

    One row per trial (task, run, attempt) and one per run; the figures (rates over the benchmark's task
    count, the mean over K, pass@k, pass^k, both denominator policies) are in summary.json and `audit show`.
    """
    from audit.errors import AuditError
    from audit.importers.mapping import split_assignment
    from audit.importers.task_runs import RunOptions, read_sources, write_import
    from audit.taskruns.models import EXCLUSIONS

    if use_gzip:
        raise click.UsageError("--gzip: a task-runs package is written as JSONL")
    files = [s for s in srcs if s.is_file()]
    if files:
        check_format(files, "task-runs")
    mapping: dict[str, str] = {}
    for text in maps:
        name, column, _ = split_assignment("--map", text)
        if name in mapping:
            raise AuditError(f"--map {name}: given twice")
        mapping[name] = column
    exclude: list[tuple[str, str]] = []
    for text in excludes:
        word, reason, _ = split_assignment("--exclude", text)
        if reason not in EXCLUSIONS:
            raise AuditError(f"--exclude {text}: {reason!r} is not an exclusion reason (expected "
                             f"{', '.join(EXCLUSIONS)})")
        exclude.append((word, reason))
    if mapping and fmt not in (None, "table"):
        raise click.UsageError("--map is for --format table")
    opts = RunOptions(run_id=run_id, benchmark=benchmark, task_count=task_count, time_limit_s=time_limit_s,
                      seed=seed, seed_ignored=seed_ignored, workers=workers, engine=engine, speculative=speculative,
                      exclude=tuple(exclude))
    imp = read_sources(list(srcs), fmt, opts, mapping)
    config = {"map": mapping, **opts.run_fields(), **({"run_id": run_id} if run_id else {}),
              **({"exclude": dict(exclude)} if exclude else {})}
    m = write_import(imp, out, on_bad_row=on_bad_row, base=load_provenance(provenance) if provenance else None,
                     model=model, package_id=package_id, force=force, config=config)
    p = imp.parsed
    runs = len(p.runs)
    left = f", {len(p.bad)} bad records left out (listed in the provenance)" if p.bad else ""
    click.echo(f"wrote {out}: task-runs package {m.package_id}, {len(p.trials)} trials of {runs} "
               f"run{'s' if runs != 1 else ''} ({imp.fmt}){left}")
    for n in p.all_notes():
        click.echo(f"  note: {n}")
    return 0

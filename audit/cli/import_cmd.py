"""`audit import`: packages from files other tools wrote (MMLU-Pro, lm-eval, any table)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from audit.cli.app import benchmark_option, cli
from audit.models import Manifest
from audit.pack import load_provenance


def _common(f):
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


def mapping_options(f):
    """`--map` and `--where`, as `import table` has them, for commands that read fixed field names (the
    importers, `audit extract`, `audit judge`)."""
    f = click.option("--where", multiple=True, metavar="COL=VALUE",
                     help="Keep records whose COL equals VALUE (COL!=VALUE: differs); repeat a column for any-of "
                          "(one run of a file holding several).")(f)
    return click.option("--map", "maps", multiple=True, metavar="FIELD=EXPR",
                        help="Read FIELD from another column, or a template like 'q{question_id}'.")(f)


_mapping = mapping_options


def _record_map(maps: tuple[str, ...], where: tuple[str, ...], fields: tuple[str, ...]) -> Any:
    from audit.importers.mapping import RecordMap

    return RecordMap.parse(maps, where, fields=fields)


def _check_format(srcs: tuple[Path, ...] | list[Path], importer: str) -> None:
    """Refuse, in one line, a file that another command reads (an lm-eval file given to mmlu-pro, a verdict file
    given to table, ...), naming what it looks like and the command to use."""
    from audit.errors import AuditError
    from audit.importers.detect import wrong_importer

    for src in srcs:
        found = wrong_importer(src, importer)
        if found is not None:
            raise AuditError(found.message(src), path=str(src))


@contextmanager
def _collapsed_problems(srcs: tuple[Path, ...] | list[Path] = (), *, hint: bool = False) -> Iterator[None]:
    """One line per kind of problem: the same field missing on every row is said once, with a count.

    With `hint`, a failed import of a file that a dedicated command reads says which (a table
    mapping that forgot the columns of an MMLU-Pro file, say).
    """
    from audit.errors import AuditError, Problem, ValidationFailed
    from audit.importers.detect import TABLE, sniff

    def hint_for() -> str | None:
        for src in srcs:
            found = sniff(src)
            if found is not None and found is not TABLE and found.importer != "table":
                return found.message(src)
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


def _check_recorded(recorded: Path | None, force: bool) -> None:
    from audit.outputs import check_output

    if recorded is not None:
        check_output(recorded, force=force, kind="verdicts")


def _write_all(outputs: list, force: bool, recorded: Path | None, write_recorded: Any) -> tuple[list[Manifest], Any]:
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


def _write_reported(outputs: list, force: bool, recorded: Path | None, write_recorded: Any,
                    bad_rows: list[dict[str, Any]] | None = None) -> Any:
    """`_write_all`, then a line per package written (and each row recorded ungraded); the recorded verdict
    file's header (None without `recorded`)."""
    with _collapsed_problems():
        manifests, header = _write_all(outputs, force, recorded, write_recorded)
        _report(manifests, [o.out for o in outputs], bad_rows)
    return header


def _exit_on_mismatch(checks: list[dict[str, Any]], message: str) -> int:
    """1, with `message` on stderr, when a cross-check failed; else 0."""
    if any(c["ok"] is False for c in checks):
        click.echo(message, err=True)
        return 1
    return 0


def _report_recorded(recorded: Path, header: Any, benchmark: str, note: str = "") -> None:
    overall = next(f for f in header.summary.figures if f.name == "accuracy_all")
    click.echo(f"wrote {recorded}: {benchmark}, {header.summary.items} items x {header.summary.samples} samples, "
               f"recorded accuracy {100 * overall.value:.2f}% ({overall.correct}/{overall.total})" + note)


_RECORDED_HELP = ("Also write the verdicts the run itself recorded as a verdict file pinned to OUT, ready for "
                  "`audit diff RECORDED.json REGRADED.json`.")


def _report(manifests: list[Manifest], outs: list[Path], bad_rows: list[dict[str, Any]] | None = None) -> None:
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


_ON_BAD_ROW = click.option(
    "--on-bad-row", type=click.Choice(["refuse", "record"]), default="refuse", show_default=True,
    help="A record whose own fields disagree (MMLU-Pro: gold `answer` vs `answer_index`; lm-eval: a target that "
         "names no option): refuse the import, or record it as ungraded with status bad_input and its reason "
         "(listed in the output and the provenance).")


@import_group.command("mmlu-pro")
@click.argument("srcs", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="SRC...")
@click.option("--items-out", type=click.Path(path_type=Path), metavar="ITEMS_OUT",
              help="Also write the items as their own package (OUT holds them already): gold letter, options, "
                   "category and question as stored.")
@_ON_BAD_ROW
@_mapping
@benchmark_option("Benchmark spec recorded in the manifest (see `audit benchmarks`).", default="mmlu_pro",
                  show_default=True)
@click.option("--recorded", type=click.Path(path_type=Path, dir_okay=False), metavar="RECORDED.json",
              help=_RECORDED_HELP + " Each row: the upstream `pred` against the record's gold letter; a null pred "
                                    "is counted wrong (upstream scores an unreproducible random guess).")
@_common
def import_mmlu_pro(srcs: tuple[Path, ...], items_out: Path | None, on_bad_row: str, maps: tuple[str, ...],
                    where: tuple[str, ...], benchmark: str, recorded: Path | None, out: Path, model: str | None,
                    provenance: Path | None, package_id: str | None, use_gzip: bool, force: bool) -> int:
    """TIGER-AI-Lab/MMLU-Pro result files: per-category `*_result.json`, the `eval_results/*.zip`
    files, or JSONL.

    One response per record (item_id = question_id); the model text comes from
    `model_outputs`, `response` or `generated_text`, and the upstream `pred` and
    that field's name go to `extra`. OUT also holds the items (gold letter, options,
    category), so `audit grade OUT --benchmark mmlu_pro` needs nothing else.
    With --recorded, the run's own verdicts too.
    """
    from audit.importers.mmlu_pro import FIELDS, mmlu_pro_files, mmlu_pro_outputs, recorded_rows
    from audit.importers.verdicts import write_recorded

    rmap = _record_map(maps, where, FIELDS)
    if not rmap:
        _check_format(srcs, "mmlu-pro")
    _check_recorded(recorded, force)
    base = load_provenance(provenance) if provenance else None
    files = mmlu_pro_files(list(srcs))
    bad_rows: list[dict[str, Any]] = []
    outputs = mmlu_pro_outputs(files, out, items_out=items_out, gzip=use_gzip, benchmark=benchmark, model=model,
                               provenance=base, package_id=package_id, on_bad_row=on_bad_row, bad_rows=bad_rows,
                               rmap=rmap)
    write = None
    if recorded is not None:
        rows, subjects, no_pred = recorded_rows(files, on_bad_row, rmap)
        source = "; ".join(f"{f.name} sha256:{f.sha256}" for f in files)

        def write(package: Path, rel: str) -> Any:
            return write_recorded(recorded, rows, benchmark=benchmark, tool="TIGER-AI-Lab/MMLU-Pro (pred)",
                                  source=source, package=package, package_path=rel, subject_of=subjects,
                                  overwrite=force)
    header = _write_reported(outputs, force, recorded, write, bad_rows)
    if recorded is not None:
        _report_recorded(recorded, header, benchmark, f"; {no_pred} without a pred counted wrong" if no_pred else "")
    return 0


@import_group.command("lm-eval")
@click.argument("src", type=click.Path(path_type=Path), metavar="SAMPLES.jsonl|DIR")
@benchmark_option("Benchmark spec recorded in the manifest (see `audit benchmarks`), e.g. mmlu_pro or "
                  "selected_choice; required for a file. For a DIR: given to every task, else the task's name when "
                  "it is a spec, else none (the task is recorded in the provenance either way).")
@click.option("--items-out", type=click.Path(path_type=Path), metavar="ITEMS_OUT",
              help="Also write the items as their own package (OUT holds them already; reference = the logged "
                   "target).")
@click.option("--item-id", default="doc_id", show_default=True, metavar="EXPR",
              help="Item id: a record field or a template such as '{doc[question_id]}'.")
@click.option("--filter", "filter_name", metavar="NAME",
              help="Which filter's records to import (default: the first in the file).")
@click.option("--no-hash-check", is_flag=True,
              help="Do not check doc_hash, prompt_hash and target_hash against the logged values.")
@click.option("--choice-by", type=click.Choice(["acc", "acc_norm", "acc_bytes"]), default="acc", show_default=True,
              help="Multiple-choice samples: the option the harness chose for this metric: argmax of the "
                   "log-likelihoods (acc), of them per character of the option (acc_norm) or per byte (acc_bytes).")
@click.option("--target-delimiter", default=" ", show_default=True, metavar="TEXT",
              help="Multiple-choice samples: the task's target_delimiter, which each logged option starts with.")
@click.option("--recorded", type=click.Path(path_type=Path, dir_okay=False), metavar="RECORDED.json",
              help=_RECORDED_HELP + " Each row: the document's logged metric (0 or 1) with the filtered answer, "
                                    "or the chosen option.")
@click.option("--metric", metavar="NAME", help="With --recorded: the logged metric that is the verdict "
                                               "(default: --choice-by for multiple choice, else the first logged).")
@_ON_BAD_ROW
@_common
def import_lm_eval(src: Path, benchmark: str, items_out: Path | None, item_id: str, filter_name: str | None,
                   no_hash_check: bool, choice_by: str, target_delimiter: str, recorded: Path | None,
                   metric: str | None, on_bad_row: str, out: Path, model: str | None, provenance: Path | None,
                   package_id: str | None, use_gzip: bool, force: bool) -> int:
    """lm-evaluation-harness `--log_samples` files (samples_<task>_<date>.jsonl), or a whole output DIR.

    generate_until samples: one response per entry of `resps`, repeats numbered as
    samples; the filtered answer and the metrics go to `extra`. multiple_choice
    (log-likelihood) samples: the option the harness chose (--choice-by) as its letter,
    every log-likelihood in `extra`; the items get the gold letter and the options.
    Grade them with `--benchmark selected_choice`. With --recorded, the harness's own verdicts too.

    DIR (the harness's --output_path, per-model subfolders included): one package per task at
    OUT/<folder>/<task>, each checked against its results_<date>.json (documents against
    n-samples, each mean metric recomputed from the samples); a mismatch exits 1.
    """
    from audit.importers.lm_eval import lm_eval_import, lm_eval_outputs
    from audit.importers.verdicts import write_recorded

    if src.is_dir():
        return _import_lm_eval_dir(src, benchmark=benchmark, items_out=items_out, item_id=item_id,
                                   filter_name=filter_name, no_hash_check=no_hash_check, choice_by=choice_by,
                                   target_delimiter=target_delimiter, recorded=recorded, out=out, model=model,
                                   provenance=provenance, package_id=package_id, use_gzip=use_gzip, force=force,
                                   on_bad_row=on_bad_row)
    if benchmark is None:
        raise click.UsageError("--benchmark is required for a samples file")
    _check_format([src], "lm-eval")
    if metric is not None and recorded is None:
        raise click.UsageError("--metric needs --recorded")
    _check_recorded(recorded, force)
    base = load_provenance(provenance) if provenance else None
    imp = lm_eval_import(src, item_id=item_id, filter_name=filter_name, verify_hashes=not no_hash_check,
                         choice_by=choice_by, target_delimiter=target_delimiter, on_bad_row=on_bad_row)
    recorded_imp = imp.reader()
    outputs = lm_eval_outputs(imp, out, benchmark=benchmark, items_out=items_out, gzip=use_gzip, model=model,
                              provenance=base, package_id=package_id)
    write = None
    if recorded is not None:
        with _collapsed_problems():
            rows, used = recorded_imp.recorded_rows(metric)
        from audit.importers.verdicts import recorded_row

        verdict_rows = [recorded_row(r["item_id"], 0, answer=r["answer"], verdict=r["verdict"], status=r["status"],
                                     reason=r["reason"], reference=r["reference"]) for r in rows]

        def write(package: Path, rel: str) -> Any:
            return write_recorded(recorded, verdict_rows, benchmark=benchmark, tool=f"lm-evaluation-harness ({used})",
                                  source=f"{imp.src.name} sha256:{imp.src.sha256}", package=package,
                                  package_path=rel, overwrite=force)
    header = _write_reported(outputs, force, recorded, write, imp.bad_rows)
    if recorded is not None:
        _report_recorded(recorded, header, benchmark, f" ({used})")
    return 0


def _import_lm_eval_dir(src: Path, *, benchmark: str | None, items_out: Path | None, item_id: str,
                        filter_name: str | None, no_hash_check: bool, choice_by: str, target_delimiter: str,
                        recorded: Path | None, out: Path, model: str | None, provenance: Path | None,
                        package_id: str | None, use_gzip: bool, force: bool, on_bad_row: str) -> int:
    import shutil

    from audit.importers import write_outputs
    from audit.importers.lm_eval_dir import describe, dir_outputs

    for flag, value in (("--items-out", items_out), ("--recorded", recorded), ("--id", package_id)):
        if value is not None:
            raise click.UsageError(f"{flag} takes a samples file, not a folder (each task's package holds its items)")
    from audit.outputs import exists_error

    if out.exists() and not force:  # a folder of packages: each one is checked as it is written
        raise exists_error(out)
    base = load_provenance(provenance) if provenance else None
    outputs, runs = dir_outputs(src, out, benchmark=benchmark, item_id=item_id, filter_name=filter_name,
                                verify_hashes=not no_hash_check, choice_by=choice_by,
                                target_delimiter=target_delimiter, gzip=use_gzip, model=model, provenance=base,
                                on_bad_row=on_bad_row)
    made: list[Path] = []  # folders made for the packages: removed again if any package fails
    for o in outputs:
        for d in reversed([o.out.parent, *o.out.parent.parents]):
            if not d.exists():
                d.mkdir()
                made.append(d)
    try:
        with _collapsed_problems():
            manifests = write_outputs(outputs, overwrite=force)
    except BaseException:
        for d in reversed(made):
            shutil.rmtree(d, ignore_errors=True)
        raise
    mismatches = 0
    for m, o, run in zip(manifests, outputs, runs, strict=True):  # dir_outputs: an output per run
        _report([m], [o.out], run.bad_rows)
        if run.results is None:
            click.echo("  not checked: no results file of this run beside its samples")
        else:
            click.echo(f"  checked against {run.results.name}: " + "; ".join(describe(c) for c in run.checks))
        mismatches += sum(c["ok"] is False for c in run.checks)
    if mismatches:
        click.echo(f"{mismatches} check(s) failed: the results file's figures do not come from these samples "
                   f"(see MISMATCH above)", err=True)
        return 1
    return 0


@import_group.command("inspect")
@click.argument("src", type=click.Path(path_type=Path), metavar="LOG.eval|LOG.json")
@benchmark_option("Benchmark spec recorded in the manifest (see `audit benchmarks`; default: the task's name when "
                  "it is a spec, else none; the task is in the provenance either way).")
@click.option("--scorer", metavar="NAME",
              help="Which scorer's values are the recorded verdicts (default: the only one).")
@click.option("--recorded", type=click.Path(path_type=Path, dir_okay=False), metavar="RECORDED.json",
              help=_RECORDED_HELP + " Each row: the scorer's value (C correct, I and N incorrect, P ungraded).")
@_common
def import_inspect(src: Path, benchmark: str | None, scorer: str | None, recorded: Path | None, out: Path,
                   model: str | None, provenance: Path | None, package_id: str | None, use_gzip: bool,
                   force: bool) -> int:
    """inspect_ai evaluation logs (.eval or .json), read with inspect_ai's own reader (the `inspect` extra).

    One response per sample and epoch (epoch 1 is sample 0), the items (target, choices, input) inside
    the package; model, task, dataset and generation config in the provenance. The scorer's logged
    accuracy is recomputed from the samples (a mismatch exits 1). With --recorded, the scorer's verdicts.
    """
    from audit.importers.inspect_ai import InspectImport, inspect_outputs, read_log
    from audit.importers.lm_eval_dir import describe
    from audit.importers.verdicts import write_recorded

    _check_recorded(recorded, force)
    base = load_provenance(provenance) if provenance else None
    sf, log = read_log(src)
    imp = InspectImport(sf, log, scorer)
    checks = imp.cross_check()
    outputs = inspect_outputs(imp, out, benchmark=benchmark, gzip=use_gzip, model=model, provenance=base,
                              package_id=package_id)
    write = None
    from audit.specs import spec_named

    bench = benchmark or spec_named(log.eval.task)
    if recorded is not None:
        if bench is None:
            raise click.UsageError(f"--recorded needs --benchmark NAME: the log's task {log.eval.task!r} is not a "
                                   f"benchmark spec (see `audit benchmarks`)")
        rows = imp.recorded_rows()

        def write(package: Path, rel: str) -> Any:
            return write_recorded(recorded, rows, benchmark=bench, tool=f"inspect_ai ({imp.scorer})",
                                  source=f"{sf.name} sha256:{sf.sha256}", package=package, package_path=rel)
    header = _write_reported(outputs, force, recorded, write)
    click.echo("  checked against the log's results: " + "; ".join(
        describe(c) if c["ok"] is not None else f"{c['what']}: not checked (the log reports none)" for c in checks))
    if recorded is not None:
        assert bench is not None  # refused above without one
        _report_recorded(recorded, header, bench, f" ({imp.scorer})")
    return _exit_on_mismatch(checks, "the log's figures do not come from its samples (see MISMATCH above)")


@import_group.command("lighteval")
@click.argument("src", type=click.Path(path_type=Path), metavar="DETAILS.parquet")
@benchmark_option("Benchmark spec recorded in the manifest (see `audit benchmarks`), e.g. gsm8k, or selected_choice "
                  "for log-likelihood tasks; required with --recorded.")
@click.option("--results", type=click.Path(path_type=Path, dir_okay=False), metavar="RESULTS.json",
              help="lighteval's results file to check the details against (default: results/<model>/"
                   "results_<date>.json beside details/<model>/<date>/, when it is there).")
@click.option("--choice-by", type=click.Choice(["acc", "acc_norm"]), default="acc", show_default=True,
              help="Log-likelihood samples: the choice with the highest log-probability (acc), or the highest per "
                   "character of the choice (acc_norm).")
@click.option("--reference", "reference_from", type=click.Choice(["gold", "boxed"]), default="gold", show_default=True,
              help="Generative items: the gold text as logged, or the last \\boxed{} in it (read by boxed@1), for "
                   "tasks that log a whole solution as the gold (math_500).")
@click.option("--recorded", type=click.Path(path_type=Path, dir_okay=False), metavar="RECORDED.json",
              help=_RECORDED_HELP + " Each row: the sample's logged metric (0 or 1).")
@click.option("--metric", metavar="NAME", help="With --recorded: the logged metric that is the verdict "
                                               "(default: the only one with 0/1 values).")
@_ON_BAD_ROW
@_common
def import_lighteval(src: Path, benchmark: str | None, results: Path | None, choice_by: str, reference_from: str,
                     recorded: Path | None,
                     metric: str | None, on_bad_row: str, out: Path, model: str | None, provenance: Path | None,
                     package_id: str | None, use_gzip: bool, force: bool) -> int:
    """lighteval per-sample details (details_<task>_<date>.parquet, any lighteval version), read with `datasets`.

    Generative samples: each generation a response, the gold text the reference. Log-likelihood samples: the
    choice lighteval's accuracy picks (--choice-by), as its letter, every log-probability in `extra`; grade them
    with `--benchmark selected_choice`. The items go inside the package. Checked against the results file: the
    examples hash lighteval recorded, recomputed from the queries, and each mean metric from the samples (a
    mismatch exits 1). With --recorded, lighteval's own verdicts.
    """
    from audit.importers.lighteval import find_results, lighteval_import, lighteval_outputs
    from audit.importers.lm_eval_dir import describe
    from audit.importers.verdicts import write_recorded

    if metric is not None and recorded is None:
        raise click.UsageError("--metric needs --recorded")
    if recorded is not None and benchmark is None:
        raise click.UsageError("--recorded needs --benchmark NAME")
    _check_recorded(recorded, force)
    base = load_provenance(provenance) if provenance else None
    imp = lighteval_import(src, choice_by=choice_by, on_bad_row=on_bad_row, reference_from=reference_from)
    results = results or find_results(src)
    checks = imp.cross_check(results)
    outputs = lighteval_outputs(imp, out, benchmark=benchmark, checks=checks, gzip=use_gzip, model=model,
                                provenance=base, package_id=package_id)
    write = None
    if recorded is not None:
        assert benchmark is not None  # refused above
        rows, used = imp.recorded_rows(metric)
        bench = benchmark

        def write(package: Path, rel: str) -> Any:
            return write_recorded(recorded, rows, benchmark=bench, tool=f"lighteval ({used})",
                                  source=f"{imp.src.name} sha256:{imp.src.sha256}", package=package, package_path=rel)
    header = _write_reported(outputs, force, recorded, write, imp.bad_rows)
    click.echo("  checked against the results file: " + "; ".join(describe(c) for c in checks))
    if recorded is not None:
        _report_recorded(recorded, header, bench, f" ({used})")
    return _exit_on_mismatch(checks, "the results file's figures do not come from these details (see MISMATCH "
                                     "above)")


@import_group.command("table")
@click.argument("src", type=click.Path(path_type=Path), metavar="SRC")
@click.option("--kind", type=click.Choice(["responses", "items"]), required=True, help="Rows to produce.")
@click.option("--map", "maps", multiple=True, metavar="FIELD=EXPR",
              help="Fill FIELD (or extra.KEY) from a column, or a template like 'gpqa-{item_index:03d}'.")
@click.option("--const", "consts", multiple=True, metavar="FIELD=VALUE", help="Fill FIELD with a constant.")
@click.option("--where", multiple=True, metavar="COL=VALUE",
              help="Keep rows whose COL equals VALUE (COL!=VALUE: differs); repeat a column for any-of.")
@click.option("--explode", multiple=True, metavar="COL[,COL...]",
              help="Parallel list columns: one row per element, sample = its index.")
@click.option("--sample-from", metavar="COL", help="Number samples by the distinct values of COL (in order "
                                                   "of appearance; the mapping goes to the provenance).")
@click.option("--keep-extra", is_flag=True, help="Put source columns no field took into extra.")
@click.option("--drop", multiple=True, metavar="COL[,COL...]", help="Columns --keep-extra leaves out.")
@click.option("--dedupe", is_flag=True, help="Write repeated identical rows once (same key, other content "
                                             "is still an error).")
@benchmark_option("Benchmark spec recorded in the manifest (see `audit benchmarks`).")
@click.option("--engine", metavar="NAME", help="Engine or tool that wrote the source, for the provenance.")
@_common
def import_table(src: Path, kind: str, maps: tuple[str, ...], consts: tuple[str, ...], where: tuple[str, ...],
                 explode: tuple[str, ...], sample_from: str | None, keep_extra: bool, drop: tuple[str, ...],
                 dedupe: bool, benchmark: str | None, engine: str | None, out: Path, model: str | None,
                 provenance: Path | None, package_id: str | None, use_gzip: bool, force: bool) -> int:
    """Any JSONL / JSONL.gz / JSON / CSV / Parquet table, mapped column by column.

    A field no option fills is taken from the column of the same name when there
    is one. Templates see every column plus _row (source row number) and, with
    --explode, _index.
    """
    from audit.importers import write_outputs
    from audit.importers.table import parse_spec, table_output

    _check_format([src], "table")
    spec = parse_spec(kind, maps=maps, consts=consts, where=where, explode=explode, sample_from=sample_from,
                      keep_extra=keep_extra, drop=drop, dedupe=dedupe)
    output, imp = table_output(str(src), out, spec, gzip=use_gzip, benchmark=benchmark, model=model,
                               engine=engine, provenance=load_provenance(provenance) if provenance else None,
                               package_id=package_id)
    with _collapsed_problems([src], hint=True):
        (manifest,) = write_outputs([output], overwrite=force)
    notes = [f"{imp.read} read"]
    if imp.filtered:
        notes.append(f"{imp.filtered} filtered out")
    if imp.deduped:
        notes.append(f"{imp.deduped} duplicates dropped")
    click.echo(f"wrote {out}: {manifest.kind} package {manifest.package_id}, {imp.written} rows "
               f"({', '.join(notes)})")
    return 0


@import_group.command("verdicts")
@click.argument("src", type=click.Path(path_type=Path), metavar="TABLE")
@benchmark_option("Benchmark spec recorded in the verdict file (see `audit benchmarks`).", required=True)
@click.option("--tool", default="another tool", show_default=True, metavar="NAME",
              help="Who recorded the verdicts (shown as each row's reason).")
@click.option("--package", type=click.Path(path_type=Path), metavar="RESPONSES_PACKAGE",
              help="Responses package the verdicts were computed from (pinned by digest).")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path, dir_okay=False), required=True,
              metavar="OUT.json", help="Verdict file to write.")
@click.option("--force", is_flag=True, help="Replace OUT.json if it exists and is a verdict file.")
@_mapping
def import_verdicts_cmd(src: Path, benchmark: str, tool: str, package: Path | None, out: Path, force: bool,
                        maps: tuple[str, ...], where: tuple[str, ...]) -> int:
    """Per-item verdicts another tool recorded, as a verdict file for `audit diff`.

    TABLE rows: item_id, sample (default 0), answer, and correct (true/false/null) or verdict
    (correct/incorrect/ungraded); optionally status, reason, reference, subject; --map reads them
    from other columns and --where picks one run. No extractor or grader is named: they are unknown.
    """
    from audit.errors import AuditError
    from audit.importers.detect import wrong_importer_for_verdicts
    from audit.importers.verdicts import FIELDS, import_verdicts
    from audit.outputs import check_output

    check_output(out, force=force, kind="verdicts")
    rmap = _record_map(maps, where, FIELDS)
    if not rmap:
        hint = wrong_importer_for_verdicts(src)
        if hint is not None:
            raise AuditError(hint, path=str(src))
    header = import_verdicts(src, out, benchmark=benchmark, tool=tool, package=package, rmap=rmap, overwrite=force)
    overall = next(f for f in header.summary.figures if f.name == "accuracy")
    click.echo(f"wrote {out}: {benchmark}, {header.summary.items} items x {header.summary.samples} samples, "
               f"recorded accuracy {100 * overall.value:.2f}% ({overall.correct}/{overall.total})")
    return 0

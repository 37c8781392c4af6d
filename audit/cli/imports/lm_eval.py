"""`audit import lm-eval`: lm-evaluation-harness samples files and output folders (audit.importers.lm_eval)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from audit.cli.app import benchmark_option
from audit.cli.imports.common import (
    FORMAT,
    ON_BAD_ROW,
    check_format,
    collapsed_problems,
    common_options,
    import_group,
    metric_option,
    recorded_option,
    recorded_writer,
    report,
    report_recorded,
    start_import,
    write_reported,
)
from audit.pack import load_provenance

_RULES = ("acc", "acc_norm", "acc_bytes")


def _choice_rules(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str | None,
                                                                                                 dict[str, str]]:
    """`--choice-by` values: (the rule for every task or None, {task: rule})."""
    every: str | None = None
    per_task: dict[str, str] = {}
    for v in values:
        task, sep, rule = v.rpartition("=")
        if rule not in _RULES or (sep and not task):
            raise click.BadParameter(f"{v!r}: expected RULE or TASK=RULE, RULE one of {', '.join(_RULES)}")
        if sep:
            per_task[task] = rule
        else:
            every = rule
    return every, per_task


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
@click.option("--choice-by", "choice_by", multiple=True, metavar="[TASK=]RULE", callback=_choice_rules,
              help="Multiple-choice samples: the option the harness chose for this metric: argmax of the "
                   "log-likelihoods (acc), of them per character of the option (acc_norm) or per byte (acc_bytes). "
                   "Default for a file: acc; for a DIR, per task: the one of them its results file logs (acc when "
                   "it logs acc; acc_norm for tasks that log acc_norm only). TASK=RULE sets one task (repeatable).")
@click.option("--target-delimiter", default=" ", show_default=True, metavar="TEXT",
              help="Multiple-choice samples: the task's target_delimiter, which each logged option starts with.")
@recorded_option("the document's logged metric (0 or 1) with the filtered answer, or the chosen option.",
                 folder="For a DIR (or a results file holding its samples), RECORDED is a folder: a verdict file per "
                        "task that names a benchmark, at RECORDED/<folder>/<task>.json, pinned to its package.")
@metric_option("--choice-by for multiple choice, else the first logged")
@ON_BAD_ROW
@FORMAT
@common_options
def import_lm_eval(src: Path, benchmark: str, items_out: Path | None, item_id: str, filter_name: str | None,
                   no_hash_check: bool, choice_by: tuple[str | None, dict[str, str]], target_delimiter: str,
                   recorded: Path | None,
                   metric: str | None, on_bad_row: str, fmt: str | None, out: Path, model: str | None,
                   provenance: Path | None, package_id: str | None, use_gzip: bool, force: bool) -> int:
    """lm-evaluation-harness `--log_samples` files (samples_<task>_<date>.jsonl), or a whole output DIR.

    generate_until samples: one response per entry of `resps`, repeats numbered as
    samples; the filtered answer and the metrics go to `extra`. multiple_choice
    (log-likelihood) samples: the option the harness chose (--choice-by) as its letter,
    every log-likelihood in `extra`; the items get the gold letter and the options.
    Grade them with `--benchmark selected_choice`. With --recorded, the harness's own verdicts too.

    DIR (the harness's --output_path, per-model subfolders included): one package per task at
    OUT/<folder>/<task>, each checked against its results_<date>.json (documents against
    n-samples, each mean metric recomputed from the samples); a mismatch exits 1. A results file that holds its
    samples (`simple_evaluate(..., log_samples=True)` saved whole) is read the same way, a package per task.
    With --on-bad-row record, a file of the folder that cannot be imported is listed (not imported, and why)
    and the other tasks are written.
    """
    from audit.importers.lm_eval import lm_eval_import, lm_eval_outputs

    if src.is_dir() and fmt is not None:
        raise click.UsageError("--format takes a file: a folder's files are told by their names")
    if src.is_dir() or _holds_its_samples(src, fmt):
        return _import_lm_eval_dir(src, benchmark=benchmark, items_out=items_out, item_id=item_id,
                                   filter_name=filter_name, no_hash_check=no_hash_check, choice_by=choice_by,
                                   target_delimiter=target_delimiter, recorded=recorded, metric=metric, out=out,
                                   model=model, provenance=provenance, package_id=package_id, use_gzip=use_gzip,
                                   force=force, on_bad_row=on_bad_row)
    if choice_by[1]:
        raise click.UsageError("--choice-by TASK=RULE takes a folder or a results file (a samples file is one task: "
                               "give RULE)")
    if benchmark is None:
        raise click.UsageError("--benchmark is required for a samples file")
    check_format([src], "lm-eval", fmt)
    if recorded is not None and recorded.is_dir():  # (a folder is RECORDED for a DIR's tasks, not for one file)
        raise click.UsageError(f"--recorded {recorded}: a samples file gets one verdict file (RECORDED.json), and "
                               f"this is a folder")
    base = start_import(recorded, force, provenance, metric=metric)
    imp = lm_eval_import(src, item_id=item_id, filter_name=filter_name, verify_hashes=not no_hash_check,
                         choice_by=choice_by[0] or "acc", target_delimiter=target_delimiter, on_bad_row=on_bad_row,
                         fmt=fmt)
    recorded_imp = imp.reader()
    outputs = lm_eval_outputs(imp, out, benchmark=benchmark, items_out=items_out, gzip=use_gzip, model=model,
                              provenance=base, package_id=package_id)
    write = None
    if recorded is not None:
        with collapsed_problems():
            verdict_rows, used = recorded_imp.recorded_verdicts(metric)
        write = recorded_writer(recorded, verdict_rows, benchmark=benchmark, tool=f"lm-evaluation-harness ({used})",
                                source=f"{imp.src.name} sha256:{imp.src.sha256}", force=force)
    header = write_reported(outputs, force, recorded, write, imp.bad_rows)
    if recorded is not None:
        report_recorded(recorded, header, benchmark, f" ({used})")
    return 0


def _holds_its_samples(src: Path, fmt: str | None) -> bool:
    """Whether `src` is a results file with its samples inside (simple_evaluate's output with log_samples): read
    as a folder of one file, a package per task."""
    from audit.importers.detect import sniff

    found = sniff(src, fmt) if src.is_file() else None
    return found is not None and found.key == "lm-eval-results-samples"


def _import_lm_eval_dir(src: Path, *, benchmark: str | None, items_out: Path | None, item_id: str,
                        filter_name: str | None, no_hash_check: bool, choice_by: tuple[str | None, dict[str, str]],
                        target_delimiter: str, recorded: Path | None, metric: str | None, out: Path,
                        model: str | None, provenance: Path | None, package_id: str | None, use_gzip: bool, force: bool,
                        on_bad_row: str) -> int:
    import shutil

    from audit.errors import AuditError, ValidationFailed
    from audit.importers import write_outputs
    from audit.importers.lm_eval_dir import describe, dir_outputs

    _check_dir_options(items_out, package_id, metric, recorded, out, force)
    base = load_provenance(provenance) if provenance else None
    bad_files: list[dict[str, Any]] | None = [] if on_bad_row == "record" else None
    outputs, runs = dir_outputs(src, out, benchmark=benchmark, item_id=item_id, filter_name=filter_name,
                                verify_hashes=not no_hash_check, choice_by=choice_by[0],
                                target_delimiter=target_delimiter, gzip=use_gzip, model=model, provenance=base,
                                on_bad_row=on_bad_row, task_choice_by=choice_by[1],
                                bad_files=bad_files)
    verdicts = _recorded_verdicts(outputs, runs, out, recorded, metric, bad_files is not None) \
        if recorded is not None else {}
    made: list[Path] = []  # folders made for the packages and verdict files: removed again if any write fails
    for path in [o.out for o in outputs] + [v[0] for v in verdicts.values() if isinstance(v, tuple)]:
        for d in reversed([path.parent, *path.parent.parents]):
            if not d.exists():
                d.mkdir()
                made.append(d)
    try:
        with collapsed_problems():
            if bad_files is None:
                manifests = write_outputs(outputs, overwrite=force)
            else:  # each task alone: a file whose rows are refused is recorded, the others written
                manifests, kept = [], []
                for o, run in zip(outputs, runs, strict=True):
                    try:
                        manifests += write_outputs([o], overwrite=force)
                    except (AuditError, ValidationFailed) as e:
                        first = e.problems[0] if isinstance(e, ValidationFailed) else e.problem
                        more = len(e.problems) - 1 if isinstance(e, ValidationFailed) else 0
                        bad_files.append({"file": str(run.source), "task": run.task, "reason": str(first) + (
                            f" (and {more} more problems)" if more else "")})
                        continue
                    kept.append((o, run))
                outputs, runs = [o for o, _ in kept], [r for _, r in kept]
        headers = _write_recorded_files(outputs, verdicts, force)
    except BaseException:
        for d in reversed(made):
            shutil.rmtree(d, ignore_errors=True)
        raise
    mismatches = 0
    for m, o, run in zip(manifests, outputs, runs, strict=True):  # dir_outputs: an output per run
        report([m], [o.out], run.bad_rows)
        if run.choice_by != "acc" or run.choice_why.startswith("--choice-by "):
            click.echo(f"  multiple-choice samples chosen by {run.choice_by} ({run.choice_why})")
        if run.results is None:
            click.echo("  not checked: no results file of this run beside its samples")
        else:
            click.echo(f"  checked against {run.results.name}: " + "; ".join(describe(c) for c in run.checks))
        if recorded is not None:
            _report_recorded_task(o, verdicts, headers)
        mismatches += sum(c["ok"] is False for c in run.checks)
    for b in bad_files or []:
        task = f" (task {b['task']})" if b.get("task") else ""
        click.echo(f"  not imported (bad_input): {b['file']}{task}: {b['reason']}", err=not outputs)
    if bad_files and not outputs:
        raise AuditError("no task of the folder could be imported (each file above says why)", path=str(src))
    if mismatches:
        click.echo(f"{mismatches} check(s) failed: the results file's figures do not come from these samples "
                   f"(see MISMATCH above)", err=True)
        return 1
    return 0



def _check_dir_options(items_out: Path | None, package_id: str | None, metric: str | None, recorded: Path | None,
                       out: Path, force: bool) -> None:
    """The options a folder (or a results file holding its samples) refuses, and its two output folders."""
    from audit.errors import AuditError
    from audit.outputs import exists_error

    for flag, value in (("--items-out", items_out), ("--id", package_id)):
        if value is not None:
            raise click.UsageError(f"{flag} takes a samples file, not a folder or a results file (each task's package "
                                   f"holds its items)")
    if metric is not None and recorded is None:
        raise click.UsageError("--metric needs --recorded")
    for folder in (out, recorded):  # folders of packages and verdict files: each one is checked as it is written
        if folder is not None and folder.exists() and not force:
            raise exists_error(folder)
    if recorded is not None and recorded.exists() and not recorded.is_dir():
        raise AuditError("--recorded: for a folder or a results file this is a folder of verdict files (one per "
                         "task), and a file is here", path=str(recorded))


_NO_BENCHMARK = ("the task {task!r} is not a benchmark spec and a verdict file names one; give --benchmark NAME "
                 "(selected_choice for multiple choice), or import its samples file alone with --benchmark and "
                 "--recorded")


def _recorded_verdicts(outputs: list[Any], runs: list[Any], out: Path, recorded: Path, metric: str | None,
                       keep_going: bool) -> dict[int, Any]:
    """Each task's recorded verdicts, read before anything is written: {id(output): (its verdict file under
    RECORDED, the rows, the metric, the samples named by sha256)}, or why there are none (a str: the task names no
    benchmark; or, with `keep_going` (--on-bad-row record), its verdicts could not be read, which else stops the
    import)."""
    from audit.errors import AuditError
    from audit.fileio import join_inside

    found: dict[int, Any] = {}
    for o, run in zip(outputs, runs, strict=True):
        if o.benchmark is None:
            found[id(o)] = _NO_BENCHMARK.format(task=run.task)
            continue
        *folders, name = o.out.relative_to(out).parts  # each part passed the name gate as the package's path
        dest = join_inside(recorded, *folders, f"{name}.json", what="task name", path=run.source)
        try:
            with collapsed_problems():
                rows, used = run.imp.reader().recorded_verdicts(metric)
        except AuditError as e:
            if not keep_going:
                raise
            found[id(o)] = str(e.problem)
            continue
        found[id(o)] = (dest, rows, used, f"{run.imp.src.name} sha256:{run.imp.src.sha256}")
    return found


def _write_recorded_files(outputs: list[Any], verdicts: dict[int, Any], force: bool) -> dict[int, Any]:
    """Write each task's verdict file, pinned to its package (written just before); {id(output): header}."""
    import os

    from audit.importers.verdicts import write_recorded

    headers = {}
    for o in outputs:
        if isinstance(verdicts.get(id(o)), tuple):
            dest, rows, used, source = verdicts[id(o)]
            headers[id(o)] = write_recorded(dest, rows, benchmark=o.benchmark, tool=f"lm-evaluation-harness ({used})",
                                            source=source, package=o.out, overwrite=force,
                                            package_path=os.path.relpath(o.out.resolve(), dest.resolve().parent))
    return headers


def _report_recorded_task(o: Any, verdicts: dict[int, Any], headers: dict[int, Any]) -> None:
    if id(o) in headers:
        dest, _, used, _ = verdicts[id(o)]
        report_recorded(dest, headers[id(o)], o.benchmark, f" ({used})", indent="  ")
    elif isinstance(verdicts.get(id(o)), str):
        click.echo(f"  recorded verdicts not written: {verdicts[id(o)]}")

"""`audit import lighteval`: lighteval per-sample details (audit.importers.lighteval)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import benchmark_option
from audit.cli.imports.common import (
    FORMAT,
    ON_BAD_ROW,
    common_options,
    exit_on_mismatch,
    import_group,
    metric_option,
    recorded_option,
    recorded_writer,
    report_recorded,
    start_import,
    write_reported,
)


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
@recorded_option("the sample's logged metric (0 or 1).")
@metric_option("the only one with 0/1 values")
@ON_BAD_ROW
@FORMAT
@common_options
def import_lighteval(src: Path, benchmark: str | None, results: Path | None, choice_by: str, reference_from: str,
                     recorded: Path | None, metric: str | None, on_bad_row: str, fmt: str | None, out: Path,
                     model: str | None, provenance: Path | None, package_id: str | None, use_gzip: bool,
                     force: bool) -> int:
    """lighteval per-sample details (details_<task>_<date>.parquet, any lighteval version), read with `datasets`.

    Generative samples: each generation a response, the gold text the reference. Log-likelihood samples: the
    choice lighteval's accuracy picks (--choice-by), as its letter, every log-probability in `extra`; grade them
    with `--benchmark selected_choice`. The items go inside the package. Checked against the results file: the
    examples hash lighteval recorded, recomputed from the queries, and each mean metric from the samples (a
    mismatch exits 1). With --recorded, lighteval's own verdicts.
    """
    from audit.importers.lighteval import find_results, lighteval_import, lighteval_outputs
    from audit.importers.lm_eval_dir import describe

    if recorded is not None and benchmark is None:
        raise click.UsageError("--recorded needs --benchmark NAME")
    base = start_import(recorded, force, provenance, metric=metric)
    imp = lighteval_import(src, choice_by=choice_by, on_bad_row=on_bad_row, reference_from=reference_from, fmt=fmt)
    results = results or find_results(src)
    checks = imp.cross_check(results)
    outputs = lighteval_outputs(imp, out, benchmark=benchmark, checks=checks, gzip=use_gzip, model=model,
                                provenance=base, package_id=package_id)
    write = None
    if recorded is not None:
        assert benchmark is not None  # refused above
        rows, used = imp.recorded_rows(metric)
        write = recorded_writer(recorded, rows, benchmark=benchmark, tool=f"lighteval ({used})",
                                source=f"{imp.src.name} sha256:{imp.src.sha256}", force=force)
    header = write_reported(outputs, force, recorded, write, imp.bad_rows)
    click.echo("  checked against the results file: " + "; ".join(describe(c) for c in checks))
    if recorded is not None:
        assert benchmark is not None  # refused above
        report_recorded(recorded, header, benchmark, f" ({used})")
    return exit_on_mismatch(checks, "the results file's figures do not come from these details (see MISMATCH "
                                     "above)")

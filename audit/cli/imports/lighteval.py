"""`audit import lighteval`: lighteval per-sample details (audit.importers.lighteval)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from audit.cli.app import benchmark_option
from audit.cli.imports.common import (
    ON_BAD_ROW,
    RECORDED_HELP,
    check_recorded,
    common_options,
    exit_on_mismatch,
    import_group,
    report_recorded,
    write_reported,
)
from audit.pack import load_provenance


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
              help=RECORDED_HELP + " Each row: the sample's logged metric (0 or 1).")
@click.option("--metric", metavar="NAME", help="With --recorded: the logged metric that is the verdict "
                                               "(default: the only one with 0/1 values).")
@ON_BAD_ROW
@common_options
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
    check_recorded(recorded, force)
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
    header = write_reported(outputs, force, recorded, write, imp.bad_rows)
    click.echo("  checked against the results file: " + "; ".join(describe(c) for c in checks))
    if recorded is not None:
        report_recorded(recorded, header, bench, f" ({used})")
    return exit_on_mismatch(checks, "the results file's figures do not come from these details (see MISMATCH "
                                     "above)")

"""`audit import inspect`: inspect_ai evaluation logs (audit.importers.inspect_ai)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import benchmark_option
from audit.cli.imports.common import (
    FORMAT,
    common_options,
    exit_on_mismatch,
    import_group,
    recorded_option,
    recorded_writer,
    report_recorded,
    start_import,
    write_reported,
)


@import_group.command("inspect")
@click.argument("src", type=click.Path(path_type=Path), metavar="LOG.eval|LOG.json")
@benchmark_option("Benchmark spec recorded in the manifest (see `audit benchmarks`; default: the task's name when "
                  "it is a spec, else none; the task is in the provenance either way).")
@click.option("--scorer", metavar="NAME",
              help="Which scorer's values are the recorded verdicts (default: the only one).")
@recorded_option("the scorer's value (C correct, I and N incorrect, P ungraded).")
@FORMAT
@common_options
def import_inspect(src: Path, benchmark: str | None, scorer: str | None, recorded: Path | None, fmt: str | None,
                   out: Path, model: str | None, provenance: Path | None, package_id: str | None, use_gzip: bool,
                   force: bool) -> int:
    """inspect_ai evaluation logs (.eval or .json), read with inspect_ai's own reader (the `inspect` extra).

    One response per sample and epoch (epoch 1 is sample 0), the items (target, choices, input) inside
    the package; model, task, dataset and generation config in the provenance. The scorer's logged
    accuracy is recomputed from the samples (a mismatch exits 1). With --recorded, the scorer's verdicts.
    """
    from audit.importers.inspect_ai import InspectImport, inspect_outputs, read_log
    from audit.importers.lm_eval_dir import describe
    from audit.specs import spec_named

    base = start_import(recorded, force, provenance)
    sf, log = read_log(src, fmt)
    imp = InspectImport(sf, log, scorer)
    checks = imp.cross_check()
    outputs = inspect_outputs(imp, out, benchmark=benchmark, gzip=use_gzip, model=model, provenance=base,
                              package_id=package_id)
    bench = benchmark or spec_named(log.eval.task)
    write = None
    if recorded is not None:
        if bench is None:
            raise click.UsageError(f"--recorded needs --benchmark NAME: the log's task {log.eval.task!r} is not a "
                                   f"benchmark spec (see `audit benchmarks`)")
        write = recorded_writer(recorded, imp.recorded_rows(), benchmark=bench,
                                tool=f"inspect_ai ({imp.scorer})", source=f"{sf.name} sha256:{sf.sha256}", force=force,
                                recorded_by=imp.recorded_by())
    header = write_reported(outputs, force, recorded, write)
    click.echo("  checked against the log's results: " + "; ".join(
        describe(c) if c["ok"] is not None else f"{c['what']}: not checked (the log reports none)" for c in checks))
    if recorded is not None:
        assert bench is not None  # refused above without one
        report_recorded(recorded, header, bench, f" ({imp.scorer})")
    return exit_on_mismatch(checks, "the log's figures do not come from its samples (see MISMATCH above)")

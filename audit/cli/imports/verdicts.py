"""`audit import verdicts`: per-item verdicts another tool recorded (audit.importers.verdicts)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import benchmark_option
from audit.cli.imports.common import FORMAT, import_group, mapping_options, record_map


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
@mapping_options
@FORMAT
def import_verdicts_cmd(src: Path, benchmark: str, tool: str, package: Path | None, out: Path, force: bool,
                        maps: tuple[str, ...], where: tuple[str, ...], fmt: str | None) -> int:
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
    rmap = record_map(maps, where, FIELDS)
    if not rmap:
        hint = wrong_importer_for_verdicts(src, fmt)
        if hint is not None:
            raise AuditError(hint, path=str(src))
    header = import_verdicts(src, out, benchmark=benchmark, tool=tool, package=package, rmap=rmap,
                             overwrite=force, fmt=fmt)
    overall = next(f for f in header.summary.figures if f.name == "accuracy")
    click.echo(f"wrote {out}: {benchmark}, {header.summary.items} items x {header.summary.samples} samples, "
               f"recorded accuracy {100 * overall.value:.2f}% ({overall.correct}/{overall.total})")
    return 0

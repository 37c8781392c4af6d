"""`audit import table`: any table, mapped column by column (audit.importers.table)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import benchmark_option
from audit.cli.imports.common import FORMAT, check_format, collapsed_problems, common_options, import_group
from audit.pack import load_provenance


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
@FORMAT
@common_options
def import_table(src: Path, kind: str, maps: tuple[str, ...], consts: tuple[str, ...], where: tuple[str, ...],
                 explode: tuple[str, ...], sample_from: str | None, keep_extra: bool, drop: tuple[str, ...],
                 dedupe: bool, benchmark: str | None, engine: str | None, fmt: str | None, out: Path, model: str | None,
                 provenance: Path | None, package_id: str | None, use_gzip: bool, force: bool) -> int:
    """Any JSONL / JSONL.gz / JSON / CSV / Parquet table, mapped column by column.

    A field no option fills is taken from the column of the same name when there
    is one. Templates see every column plus _row (source row number) and, with
    --explode, _index.
    """
    from audit.importers import write_outputs
    from audit.importers.table import parse_spec, table_output

    check_format([src], "table", fmt)
    spec = parse_spec(kind, maps=maps, consts=consts, where=where, explode=explode, sample_from=sample_from,
                      keep_extra=keep_extra, drop=drop, dedupe=dedupe)
    output, imp = table_output(str(src), out, spec, gzip=use_gzip, benchmark=benchmark, model=model,
                               engine=engine, provenance=load_provenance(provenance) if provenance else None,
                               package_id=package_id, fmt=fmt)
    with collapsed_problems([src], hint=True, fmt=fmt):
        (manifest,) = write_outputs([output], overwrite=force)
    notes = [f"{imp.read} read"]
    if imp.filtered:
        notes.append(f"{imp.filtered} filtered out")
    if imp.deduped:
        notes.append(f"{imp.deduped} duplicates dropped")
    click.echo(f"wrote {out}: {manifest.kind} package {manifest.package_id}, {imp.written} rows "
               f"({', '.join(notes)})")
    return 0

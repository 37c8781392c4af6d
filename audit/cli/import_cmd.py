"""`audit import`: packages from files other tools wrote (MMLU-Pro, lm-eval, any table)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli import cli
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


def _report(manifests: list[Manifest], outs: list[Path]) -> None:
    for m, out in zip(manifests, outs):
        rows = sum(f.rows or 0 for f in m.files)
        click.echo(f"wrote {out}: {m.kind} package {m.package_id}, {rows} rows")


@cli.group("import", context_settings={"help_option_names": ["-h", "--help"]})
def import_group() -> None:
    """Build packages from result files other tools wrote.

    Every row is checked against its schema and the source files are recorded by
    sha256; on any problem nothing is written.
    """


@import_group.command("mmlu-pro")
@click.argument("srcs", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="SRC...")
@click.option("--items-out", type=click.Path(path_type=Path), metavar="ITEMS_OUT",
              help="Also write an items package: gold letter, options, category and question as stored.")
@click.option("--benchmark", default="mmlu_pro", show_default=True, metavar="NAME", help="Benchmark name.")
@_common
def import_mmlu_pro(srcs: tuple[Path, ...], items_out: Path | None, benchmark: str, out: Path,
                    model: str | None, provenance: Path | None, package_id: str | None, use_gzip: bool,
                    force: bool) -> int:
    """TIGER-AI-Lab/MMLU-Pro result files: per-category `*_result.json`, the `eval_results/*.zip`
    files, or JSONL.

    One response per record (item_id = question_id); the model text comes from
    `model_outputs`, `response` or `generated_text`, and the upstream `pred` and
    that field's name go to `extra`.
    """
    from audit.importers import write_outputs
    from audit.importers.mmlu_pro import mmlu_pro_outputs

    outputs = mmlu_pro_outputs(list(srcs), out, items_out=items_out, gzip=use_gzip, benchmark=benchmark,
                               model=model, provenance=load_provenance(provenance) if provenance else None,
                               package_id=package_id)
    _report(write_outputs(outputs, overwrite=force), [o.out for o in outputs])
    return 0


@import_group.command("lm-eval")
@click.argument("src", type=click.Path(path_type=Path), metavar="SAMPLES.jsonl")
@click.option("--benchmark", required=True, metavar="NAME", help="Benchmark name, e.g. mmlu_pro.")
@click.option("--items-out", type=click.Path(path_type=Path), metavar="ITEMS_OUT",
              help="Also write an items package (reference = the logged target).")
@click.option("--item-id", default="doc_id", show_default=True, metavar="EXPR",
              help="Item id: a record field or a template such as '{doc[question_id]}'.")
@click.option("--filter", "filter_name", metavar="NAME",
              help="Which filter's records to import (default: the first in the file).")
@click.option("--no-hash-check", is_flag=True,
              help="Do not check doc_hash, prompt_hash and target_hash against the logged values.")
@_common
def import_lm_eval(src: Path, benchmark: str, items_out: Path | None, item_id: str, filter_name: str | None,
                   no_hash_check: bool, out: Path, model: str | None, provenance: Path | None,
                   package_id: str | None, use_gzip: bool, force: bool) -> int:
    """lm-evaluation-harness `--log_samples` files (samples_<task>_<date>.jsonl).

    generate_until samples only: one response per entry of `resps`, repeats
    numbered as samples; the filtered answer and the metrics go to `extra`.
    """
    from audit.importers import write_outputs
    from audit.importers.lm_eval import lm_eval_outputs

    outputs = lm_eval_outputs(src, out, benchmark=benchmark, items_out=items_out, item_id=item_id,
                              filter_name=filter_name, verify_hashes=not no_hash_check, gzip=use_gzip,
                              model=model, provenance=load_provenance(provenance) if provenance else None,
                              package_id=package_id)
    _report(write_outputs(outputs, overwrite=force), [o.out for o in outputs])
    return 0


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
@click.option("--benchmark", metavar="NAME", help="Benchmark name recorded in the manifest.")
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

    spec = parse_spec(kind, maps=maps, consts=consts, where=where, explode=explode, sample_from=sample_from,
                      keep_extra=keep_extra, drop=drop, dedupe=dedupe)
    output, imp = table_output(str(src), out, spec, gzip=use_gzip, benchmark=benchmark, model=model,
                               engine=engine, provenance=load_provenance(provenance) if provenance else None,
                               package_id=package_id)
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
@click.option("--benchmark", required=True, metavar="NAME", help="Benchmark name recorded in the verdict file.")
@click.option("--tool", default="another tool", show_default=True, metavar="NAME",
              help="Who recorded the verdicts (shown as each row's reason).")
@click.option("--package", type=click.Path(path_type=Path), metavar="RESPONSES_PACKAGE",
              help="Responses package the verdicts were computed from (pinned by digest).")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path, dir_okay=False), required=True,
              metavar="OUT.json", help="Verdict file to write.")
@click.option("--force", is_flag=True, help="Overwrite OUT.json if it exists.")
def import_verdicts_cmd(src: Path, benchmark: str, tool: str, package: Path | None, out: Path, force: bool) -> int:
    """Per-item verdicts another tool recorded, as a verdict file for `audit diff`.

    TABLE rows: item_id, sample (default 0), answer, and correct (true/false/null) or verdict
    (correct/incorrect/ungraded); optionally status, reason, reference. No extractor or grader
    is named: they are unknown.
    """
    from audit.errors import AuditError
    from audit.importers.verdicts import import_verdicts

    if out.exists() and not force:
        raise AuditError("already exists (use --force to overwrite)", path=str(out))
    header = import_verdicts(src, out, benchmark=benchmark, tool=tool, package=package)
    overall = next(f for f in header.summary.figures if f.name == "accuracy")
    click.echo(f"wrote {out}: {benchmark}, {header.summary.items} items x {header.summary.samples} samples, "
               f"recorded accuracy {100 * overall.value:.2f}% ({overall.correct}/{overall.total})")
    return 0

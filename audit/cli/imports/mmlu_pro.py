"""`audit import mmlu-pro`: TIGER-AI-Lab/MMLU-Pro result files (audit.importers.mmlu_pro)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from audit.cli.app import benchmark_option
from audit.cli.imports.common import (
    FORMAT,
    ON_BAD_ROW,
    check_format,
    common_options,
    import_group,
    mapping_options,
    record_map,
    recorded_option,
    recorded_writer,
    report_recorded,
    start_import,
    write_reported,
)


@import_group.command("mmlu-pro")
@click.argument("srcs", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="SRC...")
@click.option("--items-out", type=click.Path(path_type=Path), metavar="ITEMS_OUT",
              help="Also write the items as their own package (OUT holds them already): gold letter, options, "
                   "category and question as stored.")
@ON_BAD_ROW
@mapping_options
@benchmark_option("Benchmark spec recorded in the manifest (see `audit benchmarks`).", default="mmlu_pro",
                  show_default=True)
@recorded_option("the upstream `pred` against the record's gold letter; a null pred is counted wrong (upstream "
                 "scores a guess reseeded before each draw: `audit grade --policy no_answer=upstream-guess@964a136`).")
@FORMAT
@common_options
def import_mmlu_pro(srcs: tuple[Path, ...], items_out: Path | None, on_bad_row: str, maps: tuple[str, ...],
                    where: tuple[str, ...], benchmark: str, recorded: Path | None, fmt: str | None, out: Path,
                    model: str | None, provenance: Path | None, package_id: str | None, use_gzip: bool,
                    force: bool) -> int:
    """TIGER-AI-Lab/MMLU-Pro result files: per-category `*_result.json`, the `eval_results/*.zip`
    files, or JSONL.

    One response per record (item_id = question_id); the model text comes from
    `model_outputs`, `response` or `generated_text`, and the upstream `pred` and
    that field's name go to `extra`. OUT also holds the items (gold letter, options,
    category), so `audit grade OUT --benchmark mmlu_pro` needs nothing else.
    With --recorded, the run's own verdicts too.
    """
    from audit.importers.mmlu_pro import FIELDS, mmlu_pro_files, mmlu_pro_outputs, recorded_rows

    rmap = record_map(maps, where, FIELDS)
    if not rmap:
        check_format(srcs, "mmlu-pro", fmt)
    base = start_import(recorded, force, provenance)
    files = mmlu_pro_files(list(srcs), fmt)
    bad_rows: list[dict[str, Any]] = []
    outputs = mmlu_pro_outputs(files, out, items_out=items_out, gzip=use_gzip, benchmark=benchmark, model=model,
                               provenance=base, package_id=package_id, on_bad_row=on_bad_row, bad_rows=bad_rows,
                               rmap=rmap)
    write = None
    if recorded is not None:
        rows, subjects, no_pred = recorded_rows(files, on_bad_row, rmap)
        source = "; ".join(f"{f.name} sha256:{f.sha256}" for f in files)
        write = recorded_writer(recorded, rows, benchmark=benchmark, tool="TIGER-AI-Lab/MMLU-Pro (pred)",
                                source=source, force=force, subject_of=subjects)
    header = write_reported(outputs, force, recorded, write, bad_rows)
    if recorded is not None:
        report_recorded(recorded, header, benchmark, f"; {no_pred} without a pred counted wrong" if no_pred else "")
    return 0

"""`audit import task-runs`: agentic harness outputs (Terminal-Bench, SWE-bench, τ-bench, a table) into one
`task-runs` package, several runs of one system (K repetitions) together.

Each source is pinned (sha256, size) and its bytes are read once, bounded, through `sources`: a JSON document
through `read_document` (at most `MAX_SOURCE_BYTES`) checked against its pin, a table through
`iter_table_records`. The parsing is `audit.taskruns.formats` (pure functions of those bytes). A bad record
is one line naming file, row and field, and nothing is written; under `--on-bad-row record` it is left out
and listed in the provenance instead. The package is written whole or not at all (PackageWriter's rename).

Detection, when `--format` is left out:
- a folder holding `results.json` and `run_metadata.json` is a Terminal-Bench run; a folder of such folders
  (a leaderboard submission) is its runs;
- a folder holding per-instance `report.json` files (SWE-bench harness logs) is one run of them;
- a JSON document with `total_instances` is a SWE-bench run report; a JSON list of `{task_id, trial,
  reward}` is a τ-bench results file; a CSV / JSONL / Parquet file is a table (`--map`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.fileio import JsonError, loads_strict, read_document
from audit.importers import import_provenance
from audit.importers.formats import Format, Importer, register_importer
from audit.importers.sources import TABLE_SUFFIXES, SourceFile, check_pinned, iter_table_records, source_file
from audit.models import Manifest, Provenance
from audit.outputs import check_output
from audit.taskruns import formats
from audit.taskruns.formats import BadRow, Parsed
from audit.taskruns.models import RunRow

FORMATS = ("terminal-bench", "swe-bench", "tau-bench", "table")
MAX_SOURCE_BYTES = 512 * 1024 * 1024
"""Largest JSON source read whole (τ-bench's committed results with their trajectories take 4 MB a file)."""
MAX_INSTANCE_REPORTS = 100_000
"""Most per-instance report.json files one folder may hold."""
TB_RESULTS, TB_METADATA = "results.json", "run_metadata.json"
_GENERIC_STEMS = {"results", "report", "output", "outputs", "logs"}


@dataclass(frozen=True)
class RunOptions:
    """What the command line says of the runs where the sources are silent (or wrong)."""

    run_id: str | None = None
    """The run id, for a source that names none (one run only)."""
    benchmark: str | None = None
    """The benchmark's name."""
    task_count: int | None = None
    """The benchmark's task count (the denominator), overriding what the source says."""
    time_limit_s: float | None = None
    """The per-task time limit."""
    seed: int | None = None
    """The seed given."""
    seed_ignored: bool = False
    """The agent ignores the seed."""
    workers: int | None = None
    """Trials at once, where the source does not say."""
    engine: str | None = None
    """The serving engine of every trial, where the source does not say."""
    speculative: str | None = None
    """Speculative decoding of every trial, where the source does not say."""
    exclude: tuple[tuple[str, str], ...] = ()
    """(the harness's failure-mode word, closed exclusion reason): an unresolved or errored trial with that word
    is excluded for that reason (`context_length_exceeded` → `context_overflow`), the word kept beside it."""

    def run_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"benchmark": self.benchmark, "task_count": self.task_count,
                               "time_limit_s": self.time_limit_s, "seed": self.seed, "workers": self.workers}
        if self.seed_ignored:
            out["seed_ignored"] = True
        return {k: v for k, v in out.items() if v is not None}


@dataclass
class TaskRunsImport:
    """Every source read: the rows, the files pinned, and the format."""

    fmt: str
    parsed: Parsed
    files: list[SourceFile] = field(default_factory=list)


def _read_json(src: Path, label: str | None = None) -> tuple[SourceFile, bytes]:
    sf = source_file(src, (".json",), format_hint=False)
    data, err = read_document(src, MAX_SOURCE_BYTES, what="a harness results file")
    if data is None:
        raise AuditError(err or "unreadable", path=label or str(src))
    check_pinned(sf, data)  # the bytes parsed are the ones pinned
    return sf, data


def _default_run_id(path: Path) -> str:
    """A run id from a file's place: its stem, or the first folder above it with a name of its own."""
    if path.stem.lower() not in _GENERIC_STEMS:
        return path.stem
    for parent in path.resolve().parents:
        if parent.name and parent.name.lower() not in _GENERIC_STEMS:
            return parent.name
    return path.stem


def _tb_runs(src: Path) -> list[Path]:
    if (src / TB_RESULTS).is_file() and (src / TB_METADATA).is_file():
        return [src]
    runs = sorted(p for p in src.iterdir() if p.is_dir() and (p / TB_RESULTS).is_file()
                  and (p / TB_METADATA).is_file())
    return runs


def _instance_reports(src: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(src):  # no symlinked folders are followed (os.walk's default)
        dirs.sort()
        if "report.json" in files:
            found.append(Path(root) / "report.json")
            if len(found) > MAX_INSTANCE_REPORTS:
                raise AuditError(f"holds more than {MAX_INSTANCE_REPORTS:,} report.json files", path=str(src))
    return found


def detect(src: Path) -> str:
    """The format of one source (a file or folder), or AuditError saying what was looked for."""
    if src.is_dir():
        if _tb_runs(src):
            return "terminal-bench"
        if _instance_reports(src):
            return "swe-bench"
        raise AuditError("no Terminal-Bench run (results.json with run_metadata.json) or SWE-bench report.json "
                         "files under this folder; give --format", path=str(src))
    name = src.name.lower()
    if not name.endswith(".json"):
        if name.endswith(TABLE_SUFFIXES):
            return "table"
        raise AuditError("cannot tell the format from the name; give --format", path=str(src))
    _, data = _read_json(src)
    try:
        doc = loads_strict(data)
    except JsonError as e:
        raise AuditError(str(e), path=str(src), field=e.field) from None
    found = classify(doc)
    if found is None:
        raise AuditError("not a Terminal-Bench results.json, SWE-bench report or τ-bench results file; give "
                         "--format", path=str(src))
    return found


def classify(doc: Any) -> str | None:
    """The task-run format of a whole JSON document, or None."""
    if isinstance(doc, dict):
        if "total_instances" in doc:
            return "swe-bench"
        if isinstance(doc.get("results"), list) and ("n_resolved" in doc or "accuracy" in doc):
            return "terminal-bench"
        if len(doc) == 1 and _is_instance_report(next(iter(doc.values()))):
            return "swe-bench"
        return None
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and _is_tau_record(set(doc[0])):
        return "tau-bench"
    return None


def _is_instance_report(v: Any) -> bool:
    return isinstance(v, dict) and "resolved" in v and ("patch_successfully_applied" in v or "tests_status" in v)


def _is_tau_record(fields: set[str]) -> bool:
    return {"task_id", "reward", "trial"} <= fields


def _read_source(fmt: str, src: Path, opts: RunOptions, maps: dict[str, str], imp: TaskRunsImport) -> None:
    if fmt == "terminal-bench":
        if not src.is_dir():
            src = src.parent  # results.json given: its run folder
        runs = _tb_runs(src)
        if not runs:
            raise AuditError("no Terminal-Bench run here (results.json with run_metadata.json)", path=str(src))
        for run in runs:
            sf, data = _read_json(run / TB_RESULTS)
            mf, meta = _read_json(run / TB_METADATA)
            imp.files += [sf, mf]
            imp.parsed.extend(formats.terminal_bench(data, meta, str(run / TB_RESULTS), str(run / TB_METADATA)))
    elif fmt == "swe-bench":
        if src.is_dir():
            run_id = opts.run_id or src.name
            sub = Parsed()
            for rep in _instance_reports(src):
                sf, data = _read_json(rep)
                imp.files.append(sf)
                sub.extend(formats.swe_bench_instance(data, str(rep), run_id))
            sub.runs.append(RunRow(run_id=run_id, source=src.name))
            imp.parsed.extend(sub)
        else:
            sf, data = _read_json(src)
            imp.files.append(sf)
            try:
                doc = loads_strict(data)
            except JsonError:
                doc = None  # the parser says why, as a bad row
            doc_is_instance = isinstance(doc, dict) and "total_instances" not in doc
            run_id = opts.run_id or _default_run_id(src)
            if doc_is_instance:
                sub = formats.swe_bench_instance(data, str(src), run_id)
                sub.runs.append(RunRow(run_id=run_id, source=src.name))
            else:
                sub = formats.swe_bench_report(data, str(src), run_id, opts.benchmark)
            imp.parsed.extend(sub)
    elif fmt == "tau-bench":
        sf, data = _read_json(src)
        imp.files.append(sf)
        imp.parsed.extend(formats.tau_bench(data, str(src), opts.run_id or _default_run_id(src), opts.benchmark))
    elif fmt == "table":
        sf = source_file(src, TABLE_SUFFIXES, format_hint=False)
        imp.files.append(sf)
        imp.parsed.extend(formats.table(_records(sf, imp.parsed), str(src), maps, opts.run_fields()))
    else:
        raise AuditError(f"unknown format {fmt!r} (expected {', '.join(FORMATS)})")


def _records(sf: SourceFile, parsed: Parsed) -> Iterator[tuple[int, dict[str, Any]]]:
    for rec in iter_table_records(sf):
        if rec.error is not None or rec.obj is None:
            parsed.bad.append(BadRow(rec.label, rec.row, None, rec.error or "unreadable"))
            continue
        yield rec.row, rec.obj


def _apply(parsed: Parsed, opts: RunOptions) -> None:
    """The command line's run fields over every run, and its serving setup over trials that record none."""
    over = opts.run_fields()
    if opts.run_id is not None and len(parsed.runs) > 1:
        raise AuditError(f"--run-id names one run, but the sources hold {len(parsed.runs)}")
    if over:
        parsed.runs = [RunRow.model_validate({**r.model_dump(), **over}) for r in parsed.runs]
    if opts.exclude:
        why = dict(opts.exclude)
        parsed.trials = [t.model_copy(update={"outcome": "excluded", "exclusion": why[t.failure_mode],
                                              "exclusion_source": t.failure_mode})
                         if t.failure_mode in why and t.outcome in ("unresolved", "error") else t
                         for t in parsed.trials]
    setup = {k: v for k, v in (("engine", opts.engine), ("speculative", opts.speculative),
                               ("workers", opts.workers)) if v is not None}
    if setup:
        parsed.trials = [t.model_copy(update={k: v for k, v in setup.items() if getattr(t, k) is None})
                         for t in parsed.trials]


def read_sources(srcs: Sequence[Path], fmt: str | None = None, opts: RunOptions | None = None,
                 maps: dict[str, str] | None = None) -> TaskRunsImport:
    """Every source read into one set of rows (bad records listed in `parsed.bad`, not raised)."""
    opts = opts or RunOptions()
    if not srcs:
        raise AuditError("give at least one source")
    found = [fmt or detect(Path(s)) for s in srcs]
    if len(set(found)) > 1:
        raise AuditError(f"the sources are in different formats ({', '.join(sorted(set(found)))}); import them "
                         f"apart", path=str(srcs[0]))
    for s in srcs:
        if not Path(s).exists():
            raise AuditError("no such file or folder", path=str(s))
    imp = TaskRunsImport(found[0], Parsed())
    for s in srcs:
        _read_source(found[0], Path(s), opts, maps or {}, imp)
    formats.check_keys(imp.parsed)
    _apply(imp.parsed, opts)
    return imp


def write_import(imp: TaskRunsImport, out: Path, *, on_bad_row: str = "refuse", base: Provenance | None = None,
                 model: str | None = None, package_id: str | None = None, force: bool = False,
                 config: dict[str, Any] | None = None) -> Manifest:
    """Write the package of `imp`: AuditError, one line naming the first bad record's file, row and field (and
    how many more), when any record was bad and `on_bad_row` is `refuse`; nothing is written then."""
    from audit.taskruns.package import MAX_RECORDED_BAD_ROWS, write

    if on_bad_row not in ("refuse", "record"):
        raise AuditError(f"--on-bad-row must be refuse or record, got {on_bad_row!r}")
    check_output(out, force=force)
    bad = imp.parsed.bad
    whole = next((b for b in bad if b.row == 0), None)
    if whole is not None:  # a file that cannot be read (or a run given twice) is no bad row to leave out
        raise AuditError(whole.line())
    if bad and on_bad_row == "refuse":
        more = f"; {len(bad) - 1} more bad records" if len(bad) > 1 else ""
        raise AuditError(f"{bad[0].line()} (--on-bad-row record leaves it out{more})")
    if not imp.parsed.trials:
        raise AuditError("no trials read: nothing to write", path=str(out))
    extra = {"format": imp.fmt, "recorded": imp.parsed.recorded, "notes": imp.parsed.all_notes(),
             "bad_rows": [{"file": b.label, "row": b.row, "field": b.field, "message": b.message}
                          for b in bad[:MAX_RECORDED_BAD_ROWS]], "bad_row_count": len(bad)}
    models = {r.model for r in imp.parsed.runs if r.model}
    prov = import_provenance(base, files=imp.files,
                             importer={"name": "task-runs", "format": imp.fmt, "on_bad_row": on_bad_row,
                                       **(config or {})},
                             model=model or (next(iter(models)) if len(models) == 1 else None))
    prov = prov.model_copy(update={"extra": {**prov.extra, **extra}})
    return write(out, imp.parsed.runs, imp.parsed.trials, prov, package_id=package_id, force=force)


register_importer(Importer(
    "task-runs", "audit.cli.imports.task_runs",
    (Format("terminal-bench-results", "a Terminal-Bench run's results.json (trials with is_resolved and failure modes)",
            "audit import task-runs FILE --format terminal-bench -o OUT", "task-runs", order=60, tabular=False,
            document=lambda obj: isinstance(obj.get("results"), list) and "n_resolved" in obj),
     Format("swe-bench-report", "a SWE-bench harness run report (instance ids by outcome, total_instances)",
            "audit import task-runs FILE --format swe-bench -o OUT", "task-runs", order=60, tabular=False,
            document=lambda obj: "total_instances" in obj and ("resolved_ids" in obj or "resolved" in obj)),
     Format("tau-bench-results", "a τ-bench results file (task_id, trial and reward per trial)",
            "audit import task-runs FILE --format tau-bench -o OUT", "task-runs", order=60, tabular=False,
            record=_is_tau_record)),
    fields=frozenset({"task_id", "run_id", "outcome"})), __name__)

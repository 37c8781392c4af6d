"""An lm-evaluation-harness output folder → one responses package per task, each cross-checked.

The harness (`lm_eval/loggers/evaluation_tracker.py`, `save_results_aggregated` and
`save_results_samples`) writes, under `--output_path`, one folder per model
(`<model_name_sanitized>/`) holding `results_<date>.json` and, with `--log_samples`, one
`samples_<task>_<date>.jsonl` per task and subtask of that run (same `<date>`). Some versions
and wrappers keep the samples inside the results file instead (`"samples": {task: [...]}`).

Each task becomes a package at `OUT/<folder>/<task>` (the folder relative to DIR; a task run
twice in one folder gets `_<date>`), and is checked against its results file:
- the documents in the samples file against `n-samples.<task>.effective`;
- every logged metric `<metric>,<filter>` the results file reports that the samples carry per
  document and the task aggregates by mean, recomputed from the samples of that filter.
A difference is a finding (the run's figure does not come from the samples given), reported
per task and recorded in each package's provenance (`extra.import.cross_check`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.fileio import document_bytes, join_inside, parse_object, sha256_bytes
from audit.importers import Output
from audit.importers.lm_eval import CHOICE_RULES, LmEvalImport, lm_eval_import, lm_eval_outputs
from audit.importers.sources import CHANGED, SourceFile
from audit.models import Provenance

_STAMP = r"(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)"
SAMPLES_NAME = re.compile(r"samples_(.+)_" + _STAMP + r"\.(?:jsonl|parquet)", re.ASCII)
RESULTS_NAME = re.compile(r"results_(?:.+_)?(" + _STAMP[1:-1] + r"|\d{8}_\d{6})\.json", re.ASCII)
"""`results_<date>.json` as the harness names it, or `results_<model>_<harness>_<task>_<date>.json` (wrappers
of `simple_evaluate`, e.g. `results_Mistral-7B-v0.1_hf_arc_easy_20250530_123425.json`)."""
MAX_FILES = 100_000
"""Files looked at under DIR before the walk is refused (a folder of millions is not an lm-eval output)."""
MAX_DEPTH = 8
TOLERANCE = 1e-9
"""How far a recomputed mean may differ from the logged aggregate (float summation order), relative to 1."""
_LFS = b"version https://git-lfs.github.com/spec/"


@dataclass
class TaskRun:
    """One task of one run found in the folder: its samples (a file, or embedded) and its results file."""

    folder: str
    """The folder relative to DIR (`.` for DIR itself), in POSIX form."""
    task: str
    stamp: str
    samples: Path | None = None
    results: Path | None = None
    results_doc: dict[str, Any] | None = None
    """The results file as read, once: the cross-check and the model name come from it."""
    results_file: SourceFile | None = None
    """The results file pinned by the sha256 of the bytes `results_doc` was parsed from."""
    embedded: bool = False
    checks: list[dict[str, Any]] = field(default_factory=list)
    bad_rows: list[dict[str, Any]] = field(default_factory=list)
    """Records kept as bad_input (`--on-bad-row record`), filled while the package is written."""
    choice_by: str = "acc"
    """The rule by which a multiple-choice sample's option is taken as chosen, for this task."""
    choice_why: str = ""
    """Why that rule: given (`--choice-by`), or what the results file logs for the task."""
    imp: Any = None
    """The import of the task's samples (an `LmEvalImport`), once its output is made: `reader()` reads them again
    (the recorded verdicts)."""

    @property
    def source(self) -> Path:
        assert self.samples is not None or self.results is not None
        return self.samples if self.samples is not None else self.results  # type: ignore[return-value]


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    seen = 0
    base = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        depth = len(Path(dirpath).parts) - base
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) if depth < MAX_DEPTH else []
        for name in sorted(filenames):
            seen += 1
            if seen > MAX_FILES:
                raise AuditError(f"more than {MAX_FILES:,} files under the folder: not an lm-eval output folder",
                                 path=str(root))
            if SAMPLES_NAME.fullmatch(name) or RESULTS_NAME.fullmatch(name):
                p = Path(dirpath) / name
                if p.is_file() and not p.is_symlink():
                    found.append(p)
    return found


def read_results(path: Path) -> tuple[dict[str, Any], SourceFile]:
    """A results file read once: its JSON object, and the file pinned by the sha256 of those same bytes; errors
    name the file."""
    data = document_bytes(path, what="an lm-eval results file")
    if data.startswith(_LFS):
        raise AuditError("a Git LFS pointer, not the file (fetch it with `git lfs pull`)", path=str(path))
    obj, err = parse_object(data.replace(b"\n", b" "))
    if err or obj is None:
        raise AuditError(err or "not a JSON object", path=str(path))
    if not isinstance(obj.get("results"), dict):
        raise AuditError("no `results` object: not an lm-eval results file", path=str(path), field="results")
    return obj, SourceFile(path, sha256_bytes(data), len(data))


def discover(root: Path, bad_files: list[dict[str, Any]] | None = None) -> list[TaskRun]:
    """Every task run under `root`, in folder and task order; `root` may be one results file holding its samples
    (its tasks are the runs, in folder `.`). With `bad_files`, a results file that cannot be read is recorded
    there (file and reason) instead of stopping the walk, and so is a task given twice (`_twice`).

    A task is read from one copy only, or refused: its samples in a file and embedded in the results file, in
    a .jsonl and a .parquet, or embedded in two results files of the run, or samples beside two results files
    of their run are ambiguous (readers would disagree on which copy counts), never a choice made silently."""
    files = None
    if root.is_file():
        files, root = [root], root.parent
    elif not root.is_dir():
        raise AuditError("no such folder", path=str(root))
    runs: dict[tuple[str, str, str], TaskRun] = {}
    results: dict[tuple[str, str], list[Path]] = {}
    twice: dict[tuple[str, str, str], AuditError] = {}  # the first refusal of each ambiguous task

    def refuse(key: tuple[str, str, str], where: Path, message: str, field: str | None = None) -> None:
        twice.setdefault(key, AuditError(message, path=str(where), field=field))

    for p in files if files is not None else _walk(root):
        folder = p.parent.relative_to(root).as_posix()
        m = SAMPLES_NAME.fullmatch(p.name)
        if m:
            task, stamp = m.group(1), m.group(2)
            if (folder, task, stamp) in runs:  # (the walk gives a folder's files in name order)
                first = runs[(folder, task, stamp)].samples
                assert first is not None
                refuse((folder, task, stamp), p, _twice(task, first.name))
                continue
            runs[(folder, task, stamp)] = TaskRun(folder, task, stamp, samples=p)
            continue
        m = RESULTS_NAME.fullmatch(p.name)
        assert m is not None or files is not None  # the walk keeps only files so named; a file given is read as one
        results.setdefault((folder, m.group(1) if m is not None else p.stem), []).append(p)
    for (folder, stamp), paths in results.items():
        for path in paths:
            try:
                doc, pinned = read_results(path)
            except AuditError as e:
                if bad_files is None:
                    raise
                bad_files.append({"file": str(path), "reason": e.problem.message})
                continue
            _pair(runs, folder, stamp, path, doc, pinned, refuse)
    for key, error in twice.items():
        if bad_files is None:
            raise error
        del runs[key]
        field = f"field {error.problem.field}: " if error.problem.field else ""
        bad_files.append({"file": error.problem.path, "task": key[1], "reason": field + error.problem.message})
    if not runs and not bad_files:
        raise AuditError("no lm-eval samples under this folder (samples_<task>_<date>.jsonl files, or a "
                         "results_<date>.json holding `samples`; run lm-eval with --log_samples)", path=str(root))
    return sorted(runs.values(), key=lambda r: (r.folder, r.task, r.stamp))


def _pair(runs: dict[tuple[str, str, str], TaskRun], folder: str, stamp: str, path: Path, doc: dict[str, Any],
          pinned: SourceFile, refuse: Callable[..., None]) -> None:
    """One results file of run (`folder`, `stamp`): the results of the run's samples files, and a run of each task
    it embeds; a second copy of a task, or a second results file for samples, goes to `refuse`."""
    for key, run in runs.items():
        if (run.folder, run.stamp) != (folder, stamp) or run.embedded:
            continue
        if run.results is not None:
            refuse(key, path, f"a second results file of the run of {run.source.name} (the first: "
                              f"{run.results.name}): which one its samples are checked against is ambiguous "
                              f"(keep one)")
            continue
        run.results, run.results_doc, run.results_file = path, doc, pinned
    samples = doc.get("samples")
    for task in samples if isinstance(samples, dict) else ():
        if not isinstance(task, str):
            continue
        key = (folder, task, stamp)
        if key in runs:
            refuse(key, path, _twice(task, runs[key].source.name), field=f"samples.{task}")
            continue
        runs[key] = TaskRun(folder, task, stamp, results=path, results_doc=doc, results_file=pinned, embedded=True)


def _twice(task: str, first: str) -> str:
    return (f"task {task!r} of this run is also in {first}: two copies, and which one counts is ambiguous "
            f"(keep one)")


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def cross_check(run: TaskRun, imp: LmEvalImport) -> list[dict[str, Any]]:
    """The task's samples against its results file: the document count, and each mean metric recomputed.

    Each check: {what, logged, recomputed, ok} (ok None: not comparable, with `why`)."""
    if run.results is None or run.results_doc is None:
        return [{"what": "results file", "logged": None, "recomputed": None, "ok": None,
                 "why": "no results file of this run beside the samples: nothing to check against"}]
    doc = run.results_doc
    checks: list[dict[str, Any]] = []
    docs: dict[str, set[Any]] = {}
    values: dict[tuple[str, str], list[Any]] = {}
    for rec in imp.raw_records():
        if rec.obj is None:
            continue
        filt = rec.obj.get("filter")
        filt = filt if isinstance(filt, str) else "none"
        docs.setdefault(filt, set()).add(repr(rec.obj.get("doc_id")))
        for key, v in rec.obj.items():
            values.setdefault((key, filt), []).append(v)
    n_logged = None
    n_samples = doc.get("n-samples")
    if isinstance(n_samples, dict) and isinstance(n_samples.get(run.task), dict):
        n_logged = n_samples[run.task].get("effective")
    counts = sorted({len(d) for d in docs.values()})
    n_found = counts[0] if len(counts) == 1 else None
    if isinstance(n_logged, int) and not isinstance(n_logged, bool):
        checks.append({"what": "n-samples", "logged": n_logged, "recomputed": n_found if n_found is not None
                       else counts, "ok": n_found == n_logged})
    else:
        checks.append({"what": "n-samples", "logged": None, "recomputed": n_found, "ok": None,
                       "why": f"the results file reports no n-samples for {run.task}"})
    reported = doc["results"].get(run.task)
    if not isinstance(reported, dict):
        checks.append({"what": "results", "logged": None, "recomputed": None, "ok": None,
                       "why": f"the results file reports no figures for {run.task}"})
        return checks
    aggregation = _aggregations(doc, run.task)
    for key in sorted(reported):
        if "," not in key or key.split(",", 1)[0].endswith("_stderr"):
            continue
        metric, filt = key.split(",", 1)
        logged = _number(reported[key])
        if logged is None:
            continue
        per_doc = values.get((metric, filt))
        check: dict[str, Any] = {"what": key, "logged": logged, "recomputed": None, "ok": None}
        if per_doc is None:
            check["why"] = f"no sample of filter {filt!r} logs {metric}"
        elif aggregation.get(metric, "mean") != "mean":
            check["why"] = f"aggregated by {aggregation[metric]}, not a mean of per-sample values"
        elif any(_number(v) is None for v in per_doc):
            check["why"] = "its per-sample values are not all numbers"
        else:
            mean = math.fsum(float(v) for v in per_doc) / len(per_doc)
            check.update(recomputed=mean, n=len(per_doc), ok=abs(mean - logged) <= TOLERANCE * max(1.0, abs(logged)))
        checks.append(check)
    return checks


def _aggregations(doc: dict[str, Any], task: str) -> dict[str, str]:
    """metric -> aggregation name from the task's config (`metric_list`), where the results file has it."""
    out: dict[str, str] = {}
    configs = doc.get("configs")
    cfg = configs.get(task) if isinstance(configs, dict) else None
    for m in (cfg or {}).get("metric_list") or []:
        if isinstance(m, dict) and isinstance(m.get("metric"), str) and isinstance(m.get("aggregation"), str):
            out[m["metric"]] = m["aggregation"]
    return out


def describe(check: dict[str, Any]) -> str:
    """One check in words."""
    what, logged, got = check["what"], check["logged"], check["recomputed"]
    if check["ok"] is None:
        return f"{what}: not checked ({check['why']})"
    if what == "n-samples":
        return (f"n-samples {logged} = {got} documents in the samples" if check["ok"] else
                f"MISMATCH n-samples: the results file reports {logged:,} documents, the samples hold {got}")
    if what == "examples hash":  # lighteval's hash_examples over the queries
        return (f"examples hash {logged} = the {check['n']} queries" if check["ok"] else
                f"MISMATCH examples hash: the results file records {logged}, the {check['n']} queries give {got}")
    if what == "samples":  # an inspect_ai log's total_samples
        return (f"{logged} samples" if check["ok"] else
                f"MISMATCH samples: the log reports {logged:,}, it holds {got}")
    if check["ok"]:
        return f"{what} {logged:g} = the mean of {check['n']} samples"
    return (f"MISMATCH {what}: {check.get('source', 'the results file')} reports {logged:g}, the mean of "
            f"{check['n']} samples is {got:g}")


def task_choice(run: TaskRun, given: str | None, per_task: dict[str, str]) -> tuple[str, str]:
    """The choice rule for `run`'s multiple-choice samples and why: `--choice-by TASK=RULE`, else `--choice-by RULE`,
    else the one metric of acc, acc_norm, acc_bytes the results file logs for the task (acc when it logs acc or
    none of them; leaderboard tasks log acc_norm only, and grading their `acc` choice gave 50.00% for a logged 0.6)."""
    if run.task in per_task:
        return per_task[run.task], f"--choice-by {run.task}={per_task[run.task]}"
    if given is not None:
        return given, f"--choice-by {given}"
    reported = run.results_doc.get("results", {}).get(run.task) if run.results_doc is not None else None
    logged = {k.split(",", 1)[0] for k in reported if isinstance(k, str)} if isinstance(reported, dict) else set()
    rules = [r for r in CHOICE_RULES if r in logged]
    if rules and "acc" not in rules:
        return rules[0], f"the results file logs {', '.join(rules)}, not acc"
    return "acc", "the results file logs acc" if "acc" in rules else "the default (the results file logs no acc)"


def dir_outputs(root: Path, out: Path, *, benchmark: str | None, item_id: str, filter_name: str | None,
                verify_hashes: bool, choice_by: str | None, target_delimiter: str, gzip: bool, model: str | None,
                provenance: Provenance | None, on_bad_row: str = "refuse",
                task_choice_by: dict[str, str] | None = None,
                bad_files: list[dict[str, Any]] | None = None) -> tuple[list[Output], list[TaskRun]]:
    """One output per task run under `root`, each with its cross-check done (read once before writing); a task's
    package names the benchmark given, else its task when that is a spec (the task is in the provenance).
    Multiple-choice samples are chosen per task (`task_choice`). With `bad_files` (`--on-bad-row record`), a file
    that cannot be read is recorded there (file, task, reason) and the other tasks are imported."""
    from audit.specs import spec_named

    all_runs = discover(root, bad_files)
    # Every task name and folder becomes a path under OUT through the one gate, before anything is read or
    # written: a results file's `samples` may name a task `../../x`, `/abs` or a NUL.
    seen: dict[tuple[str, str], int] = {}
    for r in all_runs:
        seen[(r.folder, r.task)] = seen.get((r.folder, r.task), 0) + 1
    dests = {}
    for run in all_runs:
        name = run.task if seen[(run.folder, run.task)] == 1 else f"{run.task}_{run.stamp}"
        folder = [] if run.folder == "." else run.folder.split("/")
        where = run.results if run.embedded else run.samples
        dests[id(run)] = join_inside(join_inside(out, *folder, what="folder", path=root), name, what="task name",
                                     path=where)
    runs = []
    outputs: list[Output] = []
    for run in all_runs:
        try:
            output = _run_output(run, dests[id(run)], benchmark=benchmark, item_id=item_id, filter_name=filter_name,
                                 verify_hashes=verify_hashes, choice_by=choice_by, target_delimiter=target_delimiter,
                                 gzip=gzip, model=model, provenance=provenance, on_bad_row=on_bad_row,
                                 task_choice_by=task_choice_by, spec_named=spec_named)
        except AuditError as e:
            if bad_files is None:
                raise
            bad_files.append({"file": str(run.source), "task": run.task, "reason": e.problem.message})
            continue
        runs.append(run)
        outputs.append(output)
    return outputs, runs


def _run_output(run: TaskRun, dest: Path, *, benchmark: str | None, item_id: str,
                filter_name: str | None, verify_hashes: bool, choice_by: str | None, target_delimiter: str,
                gzip: bool, model: str | None, provenance: Provenance | None, on_bad_row: str,
                task_choice_by: dict[str, str] | None, spec_named: Any) -> Output:
    """The output of one task run (its import read and cross-checked), written to `dest`."""
    if run.samples is not None:
        with run.samples.open("rb") as fh:
            head = fh.read(len(_LFS))
        if head == _LFS:
            raise AuditError("a Git LFS pointer, not the samples (fetch them with `git lfs pull`)",
                             path=str(run.samples))
    run.choice_by, run.choice_why = task_choice(run, choice_by, task_choice_by or {})
    imp = lm_eval_import(run.source, item_id=item_id, filter_name=filter_name, verify_hashes=verify_hashes,
                         choice_by=run.choice_by, target_delimiter=target_delimiter,
                         embedded_task=run.task if run.embedded else None, on_bad_row=on_bad_row)
    if run.embedded and run.results_file is not None and \
            (imp.src.sha256, imp.src.bytes) != (run.results_file.sha256, run.results_file.bytes):
        raise AuditError(CHANGED, path=str(run.results))  # the samples and the checks would be of two files
    run.bad_rows = imp.bad_rows  # the same list: the responses reader fills it
    run.imp = imp
    run.checks = cross_check(run, imp.reader())
    task_prov = provenance
    if run.results_doc is not None and model is None and (provenance is None or provenance.model is None):
        name_in = run.results_doc.get("model_name")
        if isinstance(name_in, str) and name_in:
            task_prov = (provenance or Provenance()).model_copy(update={"model": name_in})
    (output,) = lm_eval_outputs(imp, dest, benchmark=benchmark or spec_named(run.task), gzip=gzip, model=model,
                                provenance=task_prov)
    return _with_checks(output, run)


def _with_checks(output: Output, run: TaskRun) -> Output:
    base = output.provenance

    def prov() -> Provenance:
        p = base() if callable(base) else base
        extra = dict(p.extra or {})
        imp = dict(extra.get("import") or {})
        imp["task"] = run.task
        imp["cross_check"] = {"results_file": run.results.name if run.results else None, "checks": run.checks}
        extra["import"] = imp
        if run.results_file is not None:  # pinned by the bytes the checks read, not hashed again
            files = list(extra.get("source_files") or [])
            rf = run.results_file.as_json()
            if rf not in files:
                files.append(rf)
            extra["source_files"] = files
        return p.model_copy(update={"extra": extra})

    return Output(output.out, output.kind, output.tables, prov, benchmark=output.benchmark,
                  package_id=output.package_id)

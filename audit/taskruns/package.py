"""The `task-runs` package: writing it, reading it back, recomputing its figures; the kind's registration.

A package holds `trials.jsonl` (`task_trial_row.v1`, one row per trial), `runs.jsonl` (`task_run_row.v1`,
one row per run: its provenance as data) and `summary.json` (`TaskRunsSummary`), which the reader never
takes on trust: it recomputes the summary from the rows and refuses any field that differs. The figures
the sources themselves stated (Terminal-Bench's `accuracy`, a SWE-bench report's counts) and what the
import noticed are in `provenance.extra` (`TaskRunsExtra`), so the summary can set them side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import AuditError, Problem, ValidationFailed
from audit.fileio import dumps_pretty, json_differences
from audit.models import Manifest, Provenance
from audit.packages import Package, PackageWriter, open_package
from audit.packages.kinds import Extra, Kind, register_kind
from audit.taskruns import compare, figures, render
from audit.taskruns.figures import TaskRunsSummary
from audit.taskruns.models import RUN_SCHEMA, TRIAL_SCHEMA, RunRow, TrialRow

TRIALS = "trials.jsonl"
RUNS = "runs.jsonl"
SUMMARY = "summary.json"
MAX_RECORDED_BAD_ROWS = 1000
"""Bad rows kept word for word in `provenance.extra.bad_rows` under `--on-bad-row record` (the count is whole)."""


class TaskRunsExtra(Extra):
    """`provenance.extra` of a task-runs package (what `write` records)."""

    format: str | None = None
    """The format the trials were read from (`terminal-bench`, `swe-bench`, `tau-bench`, `table`)."""
    recorded: dict[str, dict[str, Any]] = {}
    """The figures each source stated, by run id, as written (compared with the recomputed ones on show)."""
    notes: list[str] = []
    """What the import noticed (zeros read as nulls, instances not submitted)."""
    bad_rows: list[dict[str, Any]] = []
    """Records left out under `--on-bad-row record`: file, row, field and why (at most 1,000)."""
    bad_row_count: int = 0
    """How many records were left out (all of them, beyond those listed)."""


def _sorted_trials(trials: Sequence[TrialRow]) -> list[TrialRow]:
    return sorted(trials, key=lambda t: (t.run_id, t.attempt, t.task_id))


def write(out: str | Path, runs: Sequence[RunRow], trials: Sequence[TrialRow], provenance: Provenance, *,
          package_id: str | None = None, force: bool = False) -> Manifest:
    """Write the package: runs, trials (in run, attempt, task order) and the summary recomputed from them."""
    ordered = _sorted_trials(trials)
    _check_runs(runs, ordered, str(out))
    extra = TaskRunsExtra.model_validate(provenance.extra)
    summary = figures.summarize(runs, ordered, extra.recorded)
    benchmark = summary.benchmark
    with PackageWriter(out, kind=TASK_RUNS.name, benchmark=None, provenance=provenance, package_id=package_id,
                       id_prefix=f"task-runs-{benchmark}" if benchmark else "task-runs", overwrite=force) as w:
        with w.rows(RUNS, RUN_SCHEMA) as sink:
            for r in runs:
                sink.write(r)
        with w.rows(TRIALS, TRIAL_SCHEMA) as sink:
            for t in ordered:
                sink.write(t)
        w.add_text(SUMMARY, dumps_pretty(summary.model_dump(mode="json")))
    assert w.manifest is not None
    return w.manifest


def _check_runs(runs: Sequence[RunRow], trials: Sequence[TrialRow], label: str) -> None:
    """AuditError unless every trial names a run the run rows list (a trial of no run has no denominator)."""
    known = {r.run_id for r in runs}
    orphan = next((t for t in trials if t.run_id not in known), None)
    if orphan is not None:
        raise AuditError(f"trial of task {orphan.task_id!r} names run {orphan.run_id!r}, which {RUNS} does not list",
                         path=f"{label}/{TRIALS}")


@dataclass
class TaskRuns:
    """A task-runs package read back: its rows and the summary recomputed from them (equal to the stored one).
    Open until `close`."""

    pkg: Package
    runs: list[RunRow]
    trials: list[TrialRow]
    summary: TaskRunsSummary
    extra: TaskRunsExtra

    @property
    def label(self) -> str:
        return str(self.pkg.source)

    def close(self) -> None:
        self.pkg.close()

    def __enter__(self) -> TaskRuns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_task_runs(pkg: Package, label: str | None = None) -> TaskRuns:
    """A validated task-runs package, its summary recomputed from its rows: ValidationFailed naming every field
    of `summary.json` that differs. The caller closes `pkg`."""
    label = label or str(pkg.source)
    extra = TASK_RUNS.extra_of(pkg.manifest, label)
    assert isinstance(extra, TaskRunsExtra)
    runs = list(pkg.iter_rows(RUN_SCHEMA))
    trials = list(pkg.iter_rows(TRIAL_SCHEMA))
    _check_runs(runs, trials, label)
    fresh = figures.summarize(runs, trials, extra.recorded)
    stored = pkg.read_json(SUMMARY)
    diffs = json_differences(stored, fresh.model_dump(mode="json"))
    if diffs:
        raise ValidationFailed(label, [Problem(f"{label}/{SUMMARY}", f"differs from the figures recomputed from the "
                                                                      f"rows: {d}") for d in diffs[:20]])
    return TaskRuns(pkg, runs, trials, fresh, extra)


def open_task_runs(path: str | Path) -> TaskRuns:
    """Open, validate and read a task-runs package (close it, or use it in a `with`)."""
    pkg = open_package(path, kind=TASK_RUNS.name)
    try:
        return read_task_runs(pkg, str(path))
    except BaseException:
        pkg.close()
        raise


def _show(view: TaskRuns) -> list[str]:
    lines = render.summary_lines(view.summary)
    lines += [f"import     {n}" for n in view.extra.notes[:10]]
    if view.extra.bad_row_count:
        lines.append(f"note       {view.extra.bad_row_count} bad records left out at import (--on-bad-row record; "
                     f"listed in provenance.extra.bad_rows)")
    return lines


TASK_RUNS: Kind[TaskRuns] = register_kind(Kind(
    "task-runs", "agentic task runs: one row per trial (task, run, attempt) and one per run, with their figures",
    rows={TRIAL_SCHEMA: TrialRow, RUN_SCHEMA: RunRow},
    row_keys={TRIAL_SCHEMA: ("task_id", "run_id", "attempt"), RUN_SCHEMA: ("run_id",)},
    schemas={figures.SUMMARY_SCHEMA: TaskRunsSummary, compare.COMPARISON_SCHEMA: compare.Comparison,
             compare.DIFF_SCHEMA: compare.TaskRunsDiff}, extra=TaskRunsExtra,
    reader=read_task_runs, viewer=_show), __name__)

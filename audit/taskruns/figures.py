"""The figures of a task-runs package, computed from its trial and run rows: numbers only (the words are
`audit.taskruns.render`).

- the resolved rate of each repetition and run, over the benchmark's task count (a run that submitted 1 of
  91 instances reads 1/91), with the coverage beside it;
- the mean over K repetitions with the lab's 2·sd/√K, the standard error sd/√K and a t interval;
- pass@k (the unbiased estimator, Chen et al. 2021) and pass^k (τ-bench's: the mean over tasks of
  C(c, k)/C(n, k)) for every k up to the fewest trials of a task;
- both denominator policies whenever a trial is excluded: excluded left out, and excluded counted as
  failures (the lab's sensitivity line). A task with no trial, or a trial excluded as `not_submitted`,
  counts as a failure under both: not attempting a task never shrinks a denominator;
- per run: its serving setups (several in one run are visible), censored trials, and tasks per hour from
  the recorded wall clock and workers, flagged when workers ≥ tasks.

A repetition is one (run, attempt) pair: K runs of one attempt each, or one run of K attempts.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from audit import stats
from audit.taskruns.models import RunRow, TrialRow
from audit.verdicts.models import Interval

SUMMARY_SCHEMA = "task_runs_summary.v1"


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Rate(_Doc):
    """Resolved trials over a denominator."""

    resolved: int
    """Trials resolved."""
    denominator: int
    """What they are counted over."""
    value: float | None
    """resolved / denominator; null for an empty denominator."""


def _rate(resolved: int, denominator: int) -> Rate:
    return Rate(resolved=resolved, denominator=denominator, value=resolved / denominator if denominator else None)


class Repetition(_Doc):
    """One repetition: one attempt of every task in one run."""

    run_id: str
    """The run."""
    attempt: int
    """The attempt within the run."""
    trials: int
    """Trials recorded."""
    resolved: int
    """Trials resolved."""
    unresolved: int
    """Trials that ran and failed."""
    errors: int
    """Trials the harness or agent failed (counted as failures)."""
    excluded: int
    """Trials excluded for a reason a policy may leave out (not `not_submitted`)."""
    not_submitted: int
    """Trials excluded as not submitted (failures under every policy)."""
    left_out: Rate
    """Excluded left out: resolved / (task count − excluded)."""
    counted: Rate
    """Excluded counted as failures: resolved / task count."""


class SetupCount(_Doc):
    """Trials of one serving setup."""

    engine: str | None
    """Serving engine."""
    speculative: str | None
    """Speculative decoding."""
    workers: int | None
    """Trials at once."""
    trials: int
    """How many trials ran so."""


class Throughput(_Doc):
    """Tasks per hour of one run, from its recorded wall clock and workers only."""

    tasks: int
    """Trials that finished (not excluded)."""
    wall_s: float
    """The run's recorded wall clock (end − start)."""
    workers: int | None
    """Trials at once, as recorded."""
    tasks_per_hour: float
    """tasks / wall clock, per hour."""
    slowest_task_s: float | None
    """The longest trial's duration."""
    bound_by_slowest: bool
    """workers ≥ tasks: every task started at once and the wall clock is the slowest task, so the figure
    measures one task, not a rate."""


class RunFigures(_Doc):
    """One run's figures."""

    run_id: str
    """The run."""
    task_count: int
    """The denominator per attempt: the benchmark's task count (or the tasks seen, see `task_count_source`)."""
    task_count_source: Literal["recorded", "tasks seen"]
    """`recorded`: the run's `task_count`; `tasks seen`: no count was recorded, the distinct tasks of the
    package stand in."""
    attempts: int
    """Attempts (repetitions) in the run."""
    trials: int
    """Trials recorded."""
    coverage: int
    """Tasks with at least one trial that is not `not_submitted`."""
    resolved_rate: Rate
    """Resolved over task count × attempts, excluded counted as failures (how harnesses report a run)."""
    left_out_rate: Rate
    """Resolved over task count × attempts less the excluded trials."""
    censored: int
    """Trials that hit their time limit."""
    setups: list[SetupCount]
    """The serving setups its trials ran under (more than one: a mixed run)."""
    throughput: Throughput | None
    """Tasks per hour, when the run's wall clock is recorded."""
    recorded: dict[str, object]
    """The figures the source itself states for this run (kept as written)."""


class PassK(_Doc):
    """pass@k and pass^k at one k."""

    k: int
    """How many attempts."""
    pass_at_k: float
    """Unbiased pass@k: mean over tasks of 1 − C(n−c, k)/C(n, k)."""
    pass_hat_k: float
    """τ-bench's pass^k: mean over tasks of C(c, k)/C(n, k) (all k attempts succeed)."""
    tasks: int
    """Tasks with at least k trials (the mean is over these)."""


class MeanOverK(_Doc):
    """The mean resolved rate over K repetitions, under one denominator policy."""

    policy: Literal["left_out", "counted"]
    """`left_out`: excluded trials left out of each denominator; `counted`: counted as failures."""
    values: list[float]
    """Each repetition's rate, in order."""
    mean: float
    """Mean over the K repetitions."""
    sd: float | None
    """Sample standard deviation (K − 1); null for K = 1."""
    half_width_2sd: float | None
    """The lab's error bar, 2·sd/√K."""
    se: float | None
    """Standard error over repetitions, sd/√K."""
    interval_t: Interval | None
    """mean ± t(K−1)·sd/√K."""


class TaskRunsSummary(_Doc):
    """Every figure of a task-runs package, recomputed from its rows (`summary.json`)."""

    schema_version: int = 1
    """Version of this document's schema."""
    benchmark: str | None
    """The benchmark, when the runs name one."""
    tasks: int
    """Distinct tasks with a trial."""
    trials: int
    """Trials in the package."""
    outcomes: dict[str, int]
    """Trials by outcome."""
    exclusions: dict[str, int]
    """Excluded trials by reason."""
    runs: list[RunFigures]
    """Each run's figures."""
    repetitions: list[Repetition]
    """Each (run, attempt)'s figures."""
    mean: list[MeanOverK]
    """The mean over K repetitions: `counted` always, and `left_out` beside it when a trial is excluded."""
    pass_k: list[PassK]
    """pass@k and pass^k for k = 1 up to the most trials of a task, each over the tasks with k trials or more
    (`tasks` says how many: fewer than all when trials were excluded)."""
    notes: list[str]
    """What a reader must know to read the figures (mixed setups, censoring, coverage, workers ≥ tasks)."""


def _setups(trials: Iterable[TrialRow]) -> list[SetupCount]:
    c = Counter(t.setup() for t in trials)
    return [SetupCount(engine=e, speculative=s, workers=w, trials=n)
            for (e, s, w), n in sorted(c.items(), key=lambda kv: (-kv[1], str(kv[0])))]


def _mean(policy: Literal["left_out", "counted"], values: Sequence[float]) -> MeanOverK:
    k = len(values)
    mean = float(np.mean(values)) if k else 0.0
    sd = float(np.std(values, ddof=1)) if k > 1 else None
    se = sd / math.sqrt(k) if sd is not None else None
    return MeanOverK(policy=policy, values=list(values), mean=mean, sd=sd,
                     half_width_2sd=2 * se if se is not None else None, se=se, interval_t=stats.runs_t(values))


def _pass_k(trials: Iterable[TrialRow]) -> list[PassK]:
    n: Counter[str] = Counter()
    c: Counter[str] = Counter()
    for t in trials:
        if t.outcome == "excluded" and t.exclusion != "not_submitted":
            continue  # left out: it says nothing of the task's success (a not-submitted trial is a failure)
        n[t.task_id] += 1
        c[t.task_id] += t.outcome == "resolved"
    if not n:
        return []
    # Tasks share few (n, c) pairs: each estimator is computed once per pair and weighted by its tasks.
    pairs = Counter((n[t], c[t]) for t in n)
    out = []
    for k in range(1, max(n.values()) + 1):
        have = [(nc, w) for nc, w in pairs.items() if nc[0] >= k]  # fewer trials: no pass@k at this k
        tasks = sum(w for _, w in have)
        at = math.fsum(w * stats.pass_at_k(nn, cc, k) for (nn, cc), w in have) / tasks
        hat = math.fsum(w * math.comb(cc, k) / math.comb(nn, k) for (nn, cc), w in have) / tasks
        out.append(PassK(k=k, pass_at_k=at, pass_hat_k=hat, tasks=tasks))
    return out


def _throughput(run: RunRow, trials: list[TrialRow]) -> Throughput | None:
    wall = run.wall_s
    if wall is None or wall <= 0:
        return None
    done = [t for t in trials if t.outcome != "excluded"]
    workers = run.workers
    durations = [t.duration_s for t in done if t.duration_s is not None]
    return Throughput(tasks=len(done), wall_s=wall, workers=workers, tasks_per_hour=len(done) * 3600 / wall,
                      slowest_task_s=max(durations) if durations else None,
                      bound_by_slowest=workers is not None and workers >= len(done) > 0)


def summarize(runs: Sequence[RunRow], trials: Sequence[TrialRow],
              recorded: dict[str, dict[str, object]] | None = None) -> TaskRunsSummary:
    """Every figure of the package, from its rows (and the figures its sources stated, kept beside them)."""
    recorded = recorded or {}
    by_run: dict[str, list[TrialRow]] = defaultdict(list)
    for t in trials:
        by_run[t.run_id].append(t)
    all_tasks = {t.task_id for t in trials}
    notes: list[str] = []
    run_figs: list[RunFigures] = []
    reps: list[Repetition] = []
    for run in runs:
        ts = by_run.get(run.run_id, [])
        count = run.task_count if run.task_count is not None else len(all_tasks)
        source: Literal["recorded", "tasks seen"] = "recorded" if run.task_count is not None else "tasks seen"
        by_attempt: dict[int, list[TrialRow]] = defaultdict(list)
        for t in ts:
            by_attempt[t.attempt].append(t)
        for attempt in sorted(by_attempt):
            at = by_attempt[attempt]
            o = Counter(t.outcome for t in at)
            nsub = sum(t.exclusion == "not_submitted" for t in at)
            exc = o["excluded"] - nsub
            reps.append(Repetition(run_id=run.run_id, attempt=attempt, trials=len(at), resolved=o["resolved"],
                                   unresolved=o["unresolved"], errors=o["error"], excluded=exc, not_submitted=nsub,
                                   left_out=_rate(o["resolved"], count - exc), counted=_rate(o["resolved"], count)))
        attempts = max(len(by_attempt), run.attempts or 0, 1)
        resolved = sum(t.outcome == "resolved" for t in ts)
        exc_all = sum(t.outcome == "excluded" and t.exclusion != "not_submitted" for t in ts)
        covered = {t.task_id for t in ts if t.exclusion != "not_submitted"}
        run_figs.append(RunFigures(
            run_id=run.run_id, task_count=count, task_count_source=source, attempts=attempts, trials=len(ts),
            coverage=len(covered), resolved_rate=_rate(resolved, count * attempts),
            left_out_rate=_rate(resolved, count * attempts - exc_all), censored=sum(t.censored for t in ts),
            setups=_setups(ts), throughput=_throughput(run, ts), recorded=dict(recorded.get(run.run_id, {}))))
        notes.extend(_run_notes(run_figs[-1], run))
    outcomes = Counter(t.outcome for t in trials)
    exclusions = Counter(t.exclusion for t in trials if t.exclusion is not None)
    means = [_mean("counted", [r.counted.value or 0.0 for r in reps])] if reps else []
    if any(r.excluded for r in reps):
        means.insert(0, _mean("left_out", [r.left_out.value or 0.0 for r in reps]))
    benchmarks = {r.benchmark for r in runs if r.benchmark}
    return TaskRunsSummary(
        benchmark=next(iter(benchmarks)) if len(benchmarks) == 1 else None, tasks=len(all_tasks), trials=len(trials),
        outcomes={k: outcomes[k] for k in sorted(outcomes)}, exclusions={k: exclusions[k] for k in sorted(exclusions)},
        runs=run_figs, repetitions=reps, mean=means, pass_k=_pass_k(trials), notes=notes)


def _run_notes(fig: RunFigures, run: RunRow) -> list[str]:
    notes = []
    if fig.coverage < fig.task_count:
        notes.append(f"run {fig.run_id}: {fig.coverage} of {fig.task_count} tasks have a trial; the other "
                     f"{fig.task_count - fig.coverage} count as failures")
    if fig.task_count_source == "tasks seen":
        notes.append(f"run {fig.run_id}: no task count recorded; the {fig.task_count} tasks seen stand in")
    if len(fig.setups) > 1:
        parts = "; ".join(f"{s.trials} trials {_setup_words(s)}" for s in fig.setups)
        notes.append(f"run {fig.run_id} mixes {len(fig.setups)} serving setups: {parts}")
    tp = fig.throughput
    if tp is not None and tp.bound_by_slowest:
        notes.append(f"run {fig.run_id}: {tp.workers} workers for {tp.tasks} tasks: its wall clock is its slowest "
                     f"task, so {tp.tasks_per_hour:.1f} tasks/hour measures one task, not a rate")
    return notes


def _setup_words(s: SetupCount) -> str:
    parts = [s.engine or "engine unrecorded", f"speculative {s.speculative}" if s.speculative else
             "speculative unrecorded", f"{s.workers} workers" if s.workers is not None else "workers unrecorded"]
    return ", ".join(parts)

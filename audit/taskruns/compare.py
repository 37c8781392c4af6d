"""Two arms of task runs compared task by task: numbers only (words in `audit.taskruns.render`).

- Tasks are paired by id. Each arm's per-task figure is the median over its repetitions: the duration, or
  the duration per turn (`by="turns"`). The ratio is A / B: above 1, B took less time.
- The headline is the geometric mean of the per-task ratios, with a t interval on the logs (n − 1 degrees
  of freedom) and, beside it, a percentile bootstrap over tasks from a recorded seed.
- A task censored (at its time limit) in either arm is left out and counted: its duration is a lower
  bound, and keeping it pulls the ratio toward 1.
- Outcome changes are listed task by task; a warning says when the arms ran on different days or setups.
- The throughput trap: tasks per hour comes only from each run's recorded wall clock and workers, and is
  flagged when workers ≥ tasks (the run's wall clock is then its slowest task).

`outcome_changes` is also what `audit diff` lists for two packages of one run (trial by trial).
"""

from __future__ import annotations

import datetime as _dt
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from audit import stats
from audit.taskruns.figures import Throughput, _Doc, _throughput
from audit.taskruns.models import RunRow, TrialRow
from audit.verdicts.models import Interval

COMPARISON_SCHEMA = "task_runs_comparison.v1"
BOOTSTRAP_RESAMPLES = 10_000
LEVEL = 0.95

By = Literal["duration", "turns"]


class TaskPair(_Doc):
    """One task measured in both arms."""

    task_id: str
    """The task."""
    a: float
    """Arm A's figure: the median over its repetitions (seconds, or seconds per turn)."""
    b: float
    """Arm B's figure."""
    ratio: float
    """a / b."""
    a_trials: int
    """Trials of arm A the median is over."""
    b_trials: int
    """Trials of arm B the median is over."""


class RatioFigure(_Doc):
    """The geometric mean of the per-task ratios and its two intervals."""

    n: int
    """Paired tasks."""
    geometric_mean: float
    """exp(mean of ln ratio)."""
    log_sd: float | None
    """Sample sd of ln ratio; null for one task."""
    t_interval: Interval | None
    """exp(mean ± t(n−1)·sd/√n) of ln ratio; null under 2 tasks."""
    bootstrap_interval: Interval | None
    """Percentile bootstrap of the geometric mean over tasks (resampled with replacement); null under 2 tasks."""
    seed: int
    """The bootstrap's seed."""
    resamples: int
    """The bootstrap's resamples."""


class OutcomeChange(_Doc):
    """A task (or trial) whose outcome differs between the two sides."""

    key: str
    """The task id (or `task [run attempt N]` for a trial)."""
    a: str
    """Side A's outcome: the word, or `resolved c/n` over its trials."""
    b: str
    """Side B's outcome."""
    direction: Literal["gained", "lost", "changed"]
    """`gained`: B resolved more; `lost`: fewer; `changed`: the same resolved count, another outcome."""


class ArmFacts(_Doc):
    """What one arm ran on."""

    label: str
    """The arm's name (its package)."""
    runs: list[str]
    """Its run ids."""
    days: list[str]
    """UTC dates its runs (or trials) started on."""
    setups: list[str]
    """Its serving setups, in words of the rows (`engine / speculative / workers`)."""
    throughput: list[Throughput]
    """Each run's tasks per hour from its recorded wall clock and workers."""


class Comparison(_Doc):
    """Two arms compared task by task (`audit compare-runs A B`)."""

    schema_version: int = 1
    """Version of this document's schema."""
    by: By
    """`duration`: per-task duration; `turns`: duration per agent turn."""
    a: ArmFacts
    """Arm A (the numerator)."""
    b: ArmFacts
    """Arm B (the denominator)."""
    pairs: list[TaskPair]
    """Tasks measured in both arms, by id."""
    ratio: RatioFigure | None
    """The geometric mean of the ratios; null when no task pairs."""
    censored: list[str]
    """Tasks left out because a trial of either arm hit its time limit."""
    unmeasured: list[str]
    """Tasks in both arms left out for want of the figure (no duration, or no turns) in one of them."""
    only_a: list[str]
    """Tasks with trials in A only."""
    only_b: list[str]
    """Tasks with trials in B only."""
    changes: list[OutcomeChange]
    """Tasks whose outcome differs between the arms."""
    warnings: list[str]
    """The arms ran on different days, or on different setups."""
    throughput_bound: bool
    """In either arm workers ≥ tasks: its tasks per hour is its slowest task, not a rate (see `throughput`)."""


def _measure(t: TrialRow, by: By) -> float | None:
    if t.outcome == "excluded" or t.duration_s is None or t.duration_s <= 0:
        return None
    if by == "duration":
        return t.duration_s
    return t.duration_s / t.turns if t.turns else None


def _setup_words(t: TrialRow) -> str:
    e, s, w = t.setup()
    return f"{e or '?'} / {s or '?'} / {w if w is not None else '?'} workers"


def _days(runs: Sequence[RunRow], trials: Sequence[TrialRow]) -> list[str]:
    starts = [r.started_at for r in runs if r.started_at is not None]
    if not starts:
        starts = [t.started_at for t in trials if t.started_at is not None]
    return sorted({_dt.datetime.fromtimestamp(s, _dt.UTC).date().isoformat() for s in starts})


def _facts(label: str, runs: Sequence[RunRow], trials: Sequence[TrialRow]) -> ArmFacts:
    by_run: dict[str, list[TrialRow]] = defaultdict(list)
    for t in trials:
        by_run[t.run_id].append(t)
    tps = [tp for r in runs if (tp := _throughput(r, by_run.get(r.run_id, []))) is not None]
    setups = sorted({_setup_words(t) for t in trials if any(x is not None for x in t.setup())} |
                    {f"? / ? / {r.workers} workers" for r in runs if r.workers is not None
                     and not any(any(x is not None for x in t.setup()) for t in by_run.get(r.run_id, []))})
    return ArmFacts(label=label, runs=[r.run_id for r in runs], days=_days(runs, trials), setups=setups,
                    throughput=tps)


def ratio_figure(ratios: Sequence[float], seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES,
                 level: float = LEVEL) -> RatioFigure:
    """The geometric mean of `ratios` (all > 0) with its t interval on the logs and a seeded percentile
    bootstrap over them."""
    logs = np.log(np.asarray(ratios, dtype=float))
    n = len(logs)
    mean = float(logs.mean())
    sd = float(logs.std(ddof=1)) if n > 1 else None
    t_iv = boot = None
    if n > 1 and sd is not None:
        se = sd / math.sqrt(n)
        t = stats._t_quantile(0.5 + level / 2, n - 1)
        t_iv = Interval(method="paired_log_t",
                        formula=f"exp(mean ± t{{{level:g}, n−1}}·sd/√n) of per-task ln(ratio), n paired tasks",
                        low=math.exp(mean - t * se), high=math.exp(mean + t * se), se=se)
        rng = np.random.Generator(np.random.PCG64(seed))
        means = logs[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
        lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
        boot = Interval(method="bootstrap_percentile",
                        formula=f"{level:g} percentile bootstrap of the geometric mean over tasks, {resamples} "
                                f"resamples, seed {seed}", low=math.exp(float(lo)), high=math.exp(float(hi)))
    return RatioFigure(n=n, geometric_mean=math.exp(mean), log_sd=sd, t_interval=t_iv, bootstrap_interval=boot,
                       seed=seed, resamples=resamples)


def _per_task(trials: Iterable[TrialRow]) -> dict[str, list[TrialRow]]:
    out: dict[str, list[TrialRow]] = defaultdict(list)
    for t in trials:
        out[t.task_id].append(t)
    return out


def compare(a: tuple[str, Sequence[RunRow], Sequence[TrialRow]], b: tuple[str, Sequence[RunRow], Sequence[TrialRow]],
            by: By = "duration", seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES) -> Comparison:
    """Arm A against arm B, each `(label, runs, trials)`, paired by task."""
    ta, tb = _per_task(a[2]), _per_task(b[2])
    pairs: list[TaskPair] = []
    censored: list[str] = []
    unmeasured: list[str] = []
    for task in sorted(set(ta) & set(tb)):
        if any(t.censored for t in ta[task]) or any(t.censored for t in tb[task]):
            censored.append(task)
            continue
        ma = [m for t in ta[task] if (m := _measure(t, by)) is not None]
        mb = [m for t in tb[task] if (m := _measure(t, by)) is not None]
        if not ma or not mb:
            unmeasured.append(task)
            continue
        x, y = statistics.median(ma), statistics.median(mb)
        pairs.append(TaskPair(task_id=task, a=x, b=y, ratio=x / y, a_trials=len(ma), b_trials=len(mb)))
    fa, fb = _facts(a[0], a[1], a[2]), _facts(b[0], b[1], b[2])
    return Comparison(
        by=by, a=fa, b=fb, pairs=pairs,
        ratio=ratio_figure([p.ratio for p in pairs], seed, resamples) if pairs else None, censored=censored,
        unmeasured=unmeasured, only_a=sorted(set(ta) - set(tb)), only_b=sorted(set(tb) - set(ta)),
        changes=outcome_changes(a[2], b[2]), warnings=_warnings(fa, fb),
        throughput_bound=any(tp.bound_by_slowest for arm in (fa, fb) for tp in arm.throughput))


def _warnings(a: ArmFacts, b: ArmFacts) -> list[str]:
    out = []
    if a.days and b.days and a.days != b.days:
        out.append(f"the arms ran on different days ({', '.join(a.days)} and {', '.join(b.days)}): load, "
                   f"versions and hardware may differ as well as the setting compared")
    if a.setups != b.setups and (a.setups or b.setups):
        out.append(f"the arms ran on different setups ({'; '.join(a.setups) or 'unrecorded'} and "
                   f"{'; '.join(b.setups) or 'unrecorded'})")
    return out


def _side(trials: Sequence[TrialRow]) -> tuple[str, float]:
    """The side's outcome in words, and its resolved fraction."""
    c = sum(t.outcome == "resolved" for t in trials)
    if len(trials) == 1:
        t = trials[0]
        return (f"excluded ({t.exclusion})" if t.outcome == "excluded" else t.outcome), float(c)
    return f"resolved {c}/{len(trials)}", c / len(trials)


def outcome_changes(a: Iterable[TrialRow], b: Iterable[TrialRow], *, by_trial: bool = False) -> list[OutcomeChange]:
    """Tasks (or, `by_trial`, trials keyed by task, run and attempt) whose outcome differs between A and B;
    a task on one side only is not a change (`compare` lists those apart)."""
    def key(t: TrialRow) -> str:
        return f"{t.task_id} [{t.run_id} attempt {t.attempt}]" if by_trial else t.task_id

    ga: dict[str, list[TrialRow]] = defaultdict(list)
    gb: dict[str, list[TrialRow]] = defaultdict(list)
    for t in a:
        ga[key(t)].append(t)
    for t in b:
        gb[key(t)].append(t)
    out = []
    for k in sorted(set(ga) & set(gb)):
        (wa, ca), (wb, cb) = _side(ga[k]), _side(gb[k])
        if wa == wb:
            continue
        direction: Literal["gained", "lost", "changed"] = "gained" if cb > ca else "lost" if cb < ca else "changed"
        out.append(OutcomeChange(key=k, a=wa, b=wb, direction=direction))
    return out


# --------------------------------------------------------------------------- audit diff of two task-run packages

DIFF_SCHEMA = "task_runs_diff.v1"


class RunChange(_Doc):
    """One run's resolved rate in both packages."""

    run_id: str
    """The run."""
    old: str
    """Its rate in OLD (`resolved/denominator`), or `absent`."""
    new: str
    """Its rate in NEW, or `absent`."""
    points: float | None
    """NEW − OLD in percentage points; null when one side has no such run."""


class TaskRunsDiff(_Doc):
    """Two task-run packages of one run (a re-scored harness output, say), trial by trial (`audit diff`)."""

    schema_version: int = 1
    """Version of this document's schema."""
    old: str
    """The OLD package's id."""
    new: str
    """The NEW package's id."""
    runs: list[RunChange]
    """Each run's resolved rate, before and after."""
    changes: list[OutcomeChange]
    """Trials (task, run, attempt) whose outcome changed."""
    only_old: int
    """Trials only OLD has."""
    only_new: int
    """Trials only NEW has."""

    @property
    def has_changes(self) -> bool:
        return bool(self.changes or self.only_old or self.only_new or any(r.points for r in self.runs))


def diff(old_id: str, old: tuple[Sequence[RunRow], Sequence[TrialRow], Any],
         new_id: str, new: tuple[Sequence[RunRow], Sequence[TrialRow], Any]) -> TaskRunsDiff:
    """OLD against NEW, each `(runs, trials, summary)`: run rates and the trials whose outcome changed."""
    from audit.taskruns.figures import TaskRunsSummary

    def rates(s: TaskRunsSummary) -> dict[str, tuple[int, int, float | None]]:
        return {f.run_id: (f.resolved_rate.resolved, f.resolved_rate.denominator, f.resolved_rate.value)
                for f in s.runs}

    ro, rn = rates(old[2]), rates(new[2])
    runs = []
    for run_id in list(dict.fromkeys([*ro, *rn])):
        a, b = ro.get(run_id), rn.get(run_id)
        points = 100 * (b[2] - a[2]) if a and b and a[2] is not None and b[2] is not None else None
        runs.append(RunChange(run_id=run_id, old=f"{a[0]}/{a[1]}" if a else "absent",
                              new=f"{b[0]}/{b[1]}" if b else "absent", points=points))
    ko = {(t.task_id, t.run_id, t.attempt) for t in old[1]}
    kn = {(t.task_id, t.run_id, t.attempt) for t in new[1]}
    return TaskRunsDiff(old=old_id, new=new_id, runs=runs, changes=outcome_changes(old[1], new[1], by_trial=True),
                        only_old=len(ko - kn), only_new=len(kn - ko))

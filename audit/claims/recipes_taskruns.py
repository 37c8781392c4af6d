"""Agentic task-run recipes, `task_runs.*` on `task_runs` packages: an agentic headline recomputed by `audit verify`.

Every figure comes from `audit.taskruns`: `package.read_task_runs` recomputes the summary from the trial and
run rows (a stored summary that differs is an error, never a value), and `compare.compare` pairs two arms
by task as `audit compare-runs` does. Nothing here re-derives a figure.

- `task_runs.resolved_rate`: one run's resolved rate over the benchmark's task count (or excluded left out);
- `task_runs.mean`: the mean over K repetitions, its 2·sd/√K half-width, SE or t interval, under a policy;
- `task_runs.pass_k`: pass@k or pass^k at one k;
- `task_runs.paired_ratio`: the geometric mean of per-task duration (or per-turn) ratios A/B, with its t or
  bootstrap interval;
- `task_runs.tasks_per_hour`: a run's tasks per hour from its recorded wall clock, refused when workers ≥ tasks
  (the wall clock is then its slowest task: no rate can be recomputed from it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from audit.claims.registry import Context, PackageId, RecipeArgs, RecipeFailed, Result, recipe
from audit.verdicts.models import Interval

if TYPE_CHECKING:
    from audit.taskruns.figures import RunFigures
    from audit.taskruns.package import TaskRuns


def task_runs(ctx: Context, ident: str) -> TaskRuns:
    """The task-runs package `ident`, read back (summary recomputed from its rows), once per content digest."""
    from audit.taskruns.package import TASK_RUNS

    return ctx.read(ident, TASK_RUNS)


def one_run(ctx: Context, ident: str, run: str | None) -> RunFigures:
    """The figures of run `run` of task-runs package `ident` (None: the package's only run); RecipeFailed when the
    package holds several and none is named, or has no run of that id."""
    runs = task_runs(ctx, ident).summary.runs
    if run is None and len(runs) != 1:
        raise RecipeFailed(f"{ident} holds {len(runs)} runs; name one (run: ...)")
    fig = next((f for f in runs if run in (None, f.run_id)), None)
    if fig is None:
        raise RecipeFailed(f"{ident} has no run {run!r} (runs: {', '.join(f.run_id for f in runs)})")
    return fig


Policy = Literal["counted", "left_out"]


class RateArgs(RecipeArgs):
    """Arguments of task_runs.resolved_rate."""

    package: PackageId
    """A task-runs package."""
    run: str | None = None
    """The run (default: the package's only run)."""
    policy: Policy = "counted"
    """`counted`: excluded trials count as failures (over the task count); `left_out`: left out."""


@recipe("task_runs.resolved_rate", unit="fraction")
def resolved_rate(args: RateArgs, ctx: Context) -> Result:
    """One run's resolved trials over the benchmark's task count × attempts (or with the excluded left out)."""
    fig = one_run(ctx, args.package, args.run)
    rate = fig.resolved_rate if args.policy == "counted" else fig.left_out_rate
    if rate.value is None:
        raise RecipeFailed(f"run {fig.run_id}: an empty denominator")
    basis = (f"run {fig.run_id}: {rate.resolved}/{rate.denominator} resolved "
             f"({'excluded counted as failures' if args.policy == 'counted' else 'excluded left out'}; "
             f"task count {fig.task_count} {fig.task_count_source}, coverage {fig.coverage})")
    return Result(value=rate.value, unit="fraction", n=rate.denominator, n_label="trials", basis=basis)


MeanPart = Literal["value", "half_width", "se", "low", "high"]


class MeanArgs(RecipeArgs):
    """Arguments of task_runs.mean."""

    package: PackageId
    """A task-runs package of K repetitions."""
    policy: Policy = "counted"
    """`counted` or `left_out` (only when a trial is excluded)."""
    part: MeanPart = "value"
    """The mean, the lab's 2·sd/√K half-width, the SE sd/√K, or an end of mean ± 2·sd/√K."""


@recipe("task_runs.mean", unit="fraction")
def mean(args: MeanArgs, ctx: Context) -> Result:
    """The mean resolved rate over K repetitions with the lab's error bar 2·sd/√K, under a denominator policy."""
    v = task_runs(ctx, args.package)
    m = next((x for x in v.summary.mean if x.policy == args.policy), None)
    if m is None:
        raise RecipeFailed(f"{args.package}: no {args.policy} mean (no trial is excluded, so there is one policy)"
                           if args.policy == "left_out" else f"{args.package}: no repetitions")
    k = len(m.values)
    if args.part != "value" and m.se is None:
        raise RecipeFailed(f"{args.package}: one repetition has no spread (K=1)")
    half = m.half_width_2sd or 0.0
    iv = Interval(method="runs_2se", formula="mean ± 2·sd/√K over K repetitions", low=m.mean - half,
                  high=m.mean + half, se=m.se) if m.se is not None else None
    values = {"value": m.mean, "half_width": half, "se": m.se or 0.0, "low": m.mean - half, "high": m.mean + half}
    runs = ", ".join(f"{100 * x:.2f}" for x in m.values)
    basis = f"K={k} repetitions ({runs}%), excluded {'counted as failures' if args.policy == 'counted' else 'left out'}"
    return Result(value=values[args.part], unit="fraction", interval=iv if args.part == "value" else None, n=k,
                  n_label="repetitions", basis=basis, figure=(m.mean, iv) if iv is not None and args.part != "value"
                  else None)


class PassKArgs(RecipeArgs):
    """Arguments of task_runs.pass_k."""

    package: PackageId
    """A task-runs package."""
    k: int = Field(ge=1)
    """How many attempts."""
    estimator: Literal["pass_at_k", "pass_hat_k"] = "pass_at_k"
    """`pass_at_k`: the unbiased pass@k (any of k succeeds); `pass_hat_k`: τ-bench's pass^k (all k succeed)."""


@recipe("task_runs.pass_k", unit="fraction")
def pass_k(args: PassKArgs, ctx: Context) -> Result:
    """pass@k (1 − C(n−c, k)/C(n, k)) or pass^k (C(c, k)/C(n, k)), the mean over tasks with k trials or more."""
    v = task_runs(ctx, args.package)
    p = next((x for x in v.summary.pass_k if x.k == args.k), None)
    if p is None:
        most = max((x.k for x in v.summary.pass_k), default=0)
        raise RecipeFailed(f"{args.package}: no task has {args.k} trials (k goes up to {most})")
    value = p.pass_at_k if args.estimator == "pass_at_k" else p.pass_hat_k
    return Result(value=value, unit="fraction", n=p.tasks, n_label="tasks",
                  basis=f"{args.estimator.replace('_', ' ').replace('hat ', '^').replace('at ', '@')} at k={args.k} "
                        f"over {p.tasks} of {v.summary.tasks} tasks")


class PairedArgs(RecipeArgs):
    """Arguments of task_runs.paired_ratio."""

    a: PackageId
    """Arm A (the numerator: e.g. the baseline, for a speed-up)."""
    b: PackageId
    """Arm B (the denominator: e.g. the candidate)."""
    by: Literal["duration", "turns"] = "duration"
    """Per-task duration, or duration per turn."""
    interval: Literal["t", "bootstrap"] = "t"
    """Which interval goes with the value: t on the logs, or the seeded percentile bootstrap."""
    part: Literal["value", "low", "high"] = "value"
    """The geometric mean, or an end of the interval."""
    seed: int = Field(default=0, ge=0)
    """The bootstrap's seed."""


@recipe("task_runs.paired_ratio", unit="ratio")
def paired_ratio(args: PairedArgs, ctx: Context) -> Result:
    """The geometric mean of per-task ratios A/B (each the median over its repetitions), censored tasks left out,
    with a t interval on the logs or a seeded bootstrap, as `audit compare-runs` computes it."""
    from audit.taskruns import compare

    va = task_runs(ctx, args.a)
    vb = task_runs(ctx, args.b)
    c = compare.compare((args.a, va.runs, va.trials), (args.b, vb.runs, vb.trials), by=args.by, seed=args.seed)
    r = c.ratio
    if r is None or r.n < 2:
        raise RecipeFailed(f"{args.a} / {args.b}: needs at least 2 paired tasks, found {r.n if r else 0}")
    iv = r.t_interval if args.interval == "t" else r.bootstrap_interval
    assert iv is not None  # n >= 2
    values = {"value": r.geometric_mean, "low": iv.low, "high": iv.high}
    notes = "".join(f"; warning: {w}" for w in c.warnings)
    cens = f"; {len(c.censored)} censored tasks left out" if c.censored else ""
    basis = (f"geometric mean of {args.by} ratios {args.a}/{args.b} over {r.n} paired tasks{cens}; "
             f"log-scale sd {r.log_sd:.4f}{notes}")
    return Result(value=values[args.part], unit="ratio", interval=iv if args.part == "value" else None, n=r.n,
                  n_label="tasks", basis=basis, figure=(r.geometric_mean, iv) if args.part != "value" else None)


class ThroughputArgs(RecipeArgs):
    """Arguments of task_runs.tasks_per_hour."""

    package: PackageId
    """A task-runs package."""
    run: str | None = None
    """The run (default: the package's only run)."""


@recipe("task_runs.tasks_per_hour", unit="tasks/hour")
def tasks_per_hour(args: ThroughputArgs, ctx: Context) -> Result:
    """A run's finished tasks over its recorded wall clock, per hour; refused when workers ≥ tasks, where the wall
    clock is the slowest task and the figure is no rate."""
    fig = one_run(ctx, args.package, args.run)
    tp = fig.throughput
    if tp is None:
        raise RecipeFailed(f"run {fig.run_id}: no wall clock recorded (start and end)")
    if tp.bound_by_slowest:
        slow = f"{tp.slowest_task_s:.0f} s" if tp.slowest_task_s is not None else "its slowest task"
        raise RecipeFailed(f"run {fig.run_id}: {tp.workers} workers for {tp.tasks} tasks, so its wall clock "
                           f"({tp.wall_s:.0f} s) is its slowest task ({slow}): {tp.tasks_per_hour:.1f} tasks/hour "
                           f"measures one task, not a rate")
    return Result(value=tp.tasks_per_hour, unit="tasks/hour", basis=f"run {fig.run_id}: {tp.tasks} tasks in "
                  f"{tp.wall_s:.0f} s wall clock at {tp.workers} workers")

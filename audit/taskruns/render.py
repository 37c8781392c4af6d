"""The words for the task-run figures (`figures.TaskRunsSummary`, `compare.Comparison`): what `audit show`
and `audit compare-runs` print. No figure is computed here beyond a difference of two shown ones."""

from __future__ import annotations

from audit.taskruns.compare import Comparison, OutcomeChange, TaskRunsDiff
from audit.taskruns.figures import MeanOverK, Rate, RunFigures, TaskRunsSummary


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def rate(r: Rate) -> str:
    return f"{r.resolved}/{r.denominator} = {pct(r.value)}"


def mean_words(m: MeanOverK) -> str:
    """A mean over K repetitions with its error bars, in words."""
    k = len(m.values)
    if m.half_width_2sd is None or m.se is None:
        return f"{pct(m.mean)} (K={k}: no spread from one repetition)"
    t = f"; t 95% [{pct(m.interval_t.low)}, {pct(m.interval_t.high)}]" if m.interval_t else ""
    return f"{pct(m.mean)} ± {100 * m.half_width_2sd:.2f} (2·sd/√K, K={k}); se {100 * m.se:.2f}{t}"


def _run_line(f: RunFigures) -> str:
    bits = [f"{f.attempts} attempts" if f.attempts > 1 else "", f"{f.censored} censored" if f.censored else "",
            f"coverage {f.coverage}/{f.task_count}" if f.coverage < f.task_count else ""]
    rec = f.recorded.get("accuracy")
    if rec is None and "resolved_instances" in f.recorded:
        rec = f"{f.recorded['resolved_instances']} resolved"
    if rec is not None:
        bits.append(f"the source says {rec}")
    tail = "; ".join(b for b in bits if b)
    return f"run        {f.run_id}: resolved {rate(f.resolved_rate)}" + (f" ({tail})" if tail else "")


def summary_lines(s: TaskRunsSummary, max_runs: int = 12) -> list[str]:
    """What `audit show` prints of a task-runs package."""
    outcomes = ", ".join(f"{k} {v}" for k, v in s.outcomes.items())
    head = f"{s.benchmark}: " if s.benchmark else ""
    lines = [f"task runs  {head}{_runs(len(s.runs))}, {s.tasks} tasks, {s.trials} trials ({outcomes})"]
    lines += [_run_line(f) for f in s.runs[:max_runs]]
    if len(s.runs) > max_runs:
        lines.append(f"           ... {len(s.runs) - max_runs} more runs")
    if s.exclusions:
        lines.append("excluded   " + ", ".join(f"{k} {v}" for k, v in s.exclusions.items()))
    by = {m.policy: m for m in s.mean}
    if "left_out" in by:
        # The lab's sensitivity line: both denominator policies, side by side.
        lines.append(f"mean       excluded left out {mean_words(by['left_out'])}")
        lines.append(f"           excluded counted as failures {mean_words(by['counted'])}")
    elif "counted" in by:
        lines.append(f"mean       {mean_words(by['counted'])}")
    if s.pass_k:
        lines.append("pass@k     " + "  ".join(f"k={p.k} {pct(p.pass_at_k)}" for p in s.pass_k))
        fewer = [p for p in s.pass_k if p.tasks < s.tasks]
        if fewer:
            lines.append(f"           from k={fewer[0].k} over fewer tasks (trials excluded): "
                         + ", ".join(f"k={p.k} {p.tasks}" for p in fewer))
        lines.append("pass^k     " + "  ".join(f"k={p.k} {pct(p.pass_hat_k)}" for p in s.pass_k))
    lines += [f"note       {n}" for n in s.notes]
    return lines


def change_lines(changes: list[OutcomeChange], max_items: int = 50) -> list[str]:
    """Outcome changes, one a line, as `audit diff` lists verdicts."""
    out = [f"  {c.key:<40} {c.a:>16} → {c.b:<16} {c.direction}" for c in changes[:max_items]]
    if len(changes) > max_items:
        out.append(f"  ... {len(changes) - max_items} more")
    return out


def comparison_lines(c: Comparison, max_pairs: int = 40) -> list[str]:
    """What `audit compare-runs A B` prints."""
    unit = "s" if c.by == "duration" else "s/turn"
    what = "duration" if c.by == "duration" else "duration per turn"
    lines = [f"compare-runs  A {c.a.label} ({_runs(len(c.a.runs))}) vs B {c.b.label} ({_runs(len(c.b.runs))}), "
             f"by {what}: ratio A/B per task, each the median over its repetitions"]
    for p in c.pairs[:max_pairs]:
        lines.append(f"  {p.task_id:<32} {p.a:>10.1f} {unit} {p.b:>10.1f} {unit}  {p.ratio:6.3f}×")
    if len(c.pairs) > max_pairs:
        lines.append(f"  ... {len(c.pairs) - max_pairs} more tasks")
    r = c.ratio
    if r is None:
        lines.append("geomean    no task measured in both arms")
    else:
        t = f"t 95% {r.t_interval.low:.2f}–{r.t_interval.high:.2f}" if r.t_interval else "no interval from 1 task"
        b = (f"; bootstrap 95% {r.bootstrap_interval.low:.2f}–{r.bootstrap_interval.high:.2f} "
             f"(seed {r.seed}, {r.resamples:,} resamples)") if r.bootstrap_interval else ""
        lines.append(f"geomean    {r.geometric_mean:.2f}× ({t} on the logs, n={r.n}{b})")
    if c.censored:
        lines.append(f"censored   {len(c.censored)} tasks left out (a trial hit its time limit in either arm: "
                     f"{', '.join(c.censored)}); keeping them biases the ratio toward 1")
    if c.unmeasured:
        lines.append(f"unmeasured {len(c.unmeasured)} tasks without a {what} in one arm: {', '.join(c.unmeasured)}")
    if c.only_a or c.only_b:
        lines.append(f"unpaired   {len(c.only_a)} tasks only in A, {len(c.only_b)} only in B")
    if c.changes:
        lines.append(f"outcomes   {len(c.changes)} tasks changed (A → B):")
        lines += change_lines(c.changes)
    else:
        lines.append("outcomes   no task changed outcome")
    lines += _throughput_lines(c)
    lines += [f"warning    {w}" for w in c.warnings]
    return lines


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _throughput_lines(c: Comparison) -> list[str]:
    ta, tb = c.a.throughput, c.b.throughput
    if len(ta) != 1 or len(tb) != 1:
        return ["tasks/hour not compared: an arm of several runs has no single wall clock"] if ta and tb else []
    a, b = ta[0], tb[0]
    change = b.tasks_per_hour / a.tasks_per_hour - 1 if a.tasks_per_hour else None
    flag = c.throughput_bound
    lines = [f"tasks/hour A {a.tasks_per_hour:.1f} ({a.tasks} tasks, {a.workers} workers, wall {a.wall_s:.0f} s) → "
             f"B {b.tasks_per_hour:.1f} ({b.tasks} tasks, {b.workers} workers, wall {b.wall_s:.0f} s)"
             + (f": {100 * change:+.0f}%" if change is not None else "")]
    if flag:
        lines.append("           not a throughput figure: with workers ≥ tasks every task starts at once and a "
                     "run's wall clock is its slowest task, so the change measures one task")
    return lines


def diff_lines(d: TaskRunsDiff, max_items: int = 20) -> list[str]:
    """What `audit diff OLD NEW` prints for two task-run packages."""
    lines = [f"audit diff: task runs {d.old} → {d.new}"]
    for r in d.runs:
        change = "" if r.points is None else f" ({r.points:+.2f} points)"
        lines.append(f"run        {r.run_id}: resolved {r.old} → {r.new}{change}")
    if d.changes:
        lines.append(f"changed    {len(d.changes)} trials (OLD → NEW):")
        lines += change_lines(d.changes, max_items)
    else:
        lines.append("changed    no trial changed outcome")
    if d.only_old or d.only_new:
        lines.append(f"unpaired   {d.only_old} trials only in OLD, {d.only_new} only in NEW")
    return lines

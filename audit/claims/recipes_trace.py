"""Profiler-trace recipes: `trace.*` on `profile` packages (`audit trace`).

A profile package holds the raw trace when it was small enough (`trace/FILE`). Then the figures
are recomputed from it by `audit.trace.analyze` with the options the summary records, and the
stored summary and rows must be what that gives, or the claim does not survive. A package that
only pins its trace by sha256 cannot be recomputed from the trace: its figures come from
`summary.json`, cross-checked against `steps.jsonl`, and the claim's basis says so.

Per-step figures exist only between step markers; a package without them (`markers.refused`)
is refused with the reason the trace gave, never divided by a guessed step count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from audit.claims.registry import Context, PackageId, RecipeArgs, RecipeFailed, Result, Series, recipe

if TYPE_CHECKING:
    from audit.trace.models import StepFigures, TraceSummary
    from audit.trace.package import LoadedProfile


def profile(ctx: Context, ident: str) -> tuple[LoadedProfile, str]:
    """The profile package `ident` read by its kind (`audit.trace.package.read_checked`: recomputed from its trace
    when it holds it, else cross-checked against its steps); returns (loaded, how the figures were checked)."""
    from audit.trace.package import PROFILE

    checked = ctx.read(ident, PROFILE, remember=True)  # once per content digest and process: a trace is large
    return checked.loaded, checked.how


def _steps(ident: str, loaded: LoadedProfile) -> StepFigures:
    s = loaded.summary
    if s.steps is None:
        why = s.markers.refused or "no complete step"
        raise RecipeFailed(f"{ident} has no per-step figures: {why}")
    return s.steps


def _where(s: TraceSummary, steps: StepFigures) -> str:
    flt = f", filter {s.config.step_filter}" if s.config.step_filter else ""
    return (f"{steps.steps} selected of {s.markers.complete_steps} complete steps between {s.markers.found} "
            f"markers {s.config.step_marker}{flt}")


Statistic = Literal["median", "min", "max"]


class KernelsArgs(RecipeArgs):
    """Arguments of trace.kernels_per_step."""

    package: PackageId
    """A profile package (`audit trace`) with per-step figures."""
    statistic: Statistic = "median"
    """Over the selected steps: `median`, `min` or `max`."""
    stream: str | None = None
    """One stream's kernels (`STREAM`, or `DEVICE:STREAM`); all streams when unset."""


@recipe("trace.kernels_per_step", unit="count")
def kernels_per_step(args: KernelsArgs, ctx: Context) -> Result:
    """GPU kernels launched per step, counted between consecutive step markers (a kernel belongs to the step its
    launch started in; CUDA-graph replays count every kernel); refused when the trace has no step markers."""
    loaded, how = profile(ctx, args.package)
    steps = _steps(args.package, loaded)
    if args.stream is None:
        spread, label = steps.kernels_per_step, "all streams"
    else:
        found = steps.kernels_per_step_by_stream.get(args.stream)
        if found is None:
            known = ", ".join(sorted(steps.kernels_per_step_by_stream)) or "none"
            raise RecipeFailed(f"{args.package} has no stream {args.stream!r} (streams: {known})")
        spread, label = found, f"stream {args.stream}"
    value = float(getattr(spread, args.statistic))
    selected = [r for r in loaded.steps if r.selected]
    counts = [float(r.kernels if args.stream is None else r.kernels_by_stream.get(args.stream, 0)) for r in selected]
    s = loaded.summary
    graphs = s.cuda_graphs
    basis = (f"{label}: median {spread.median:g}, {spread.min}–{spread.max} over {_where(s, steps)}; "
             f"{graphs.graph_launches} CUDA-graph launches ran {graphs.kernels:,} kernels; {how}")
    series = Series(title=f"kernels per step ({label})", xlabel="step", ylabel="kernels",
                    lines=(("selected steps",
                                            tuple((float(r.step), c) for r, c in zip(selected, counts, strict=True))),),
                    style="dots", center=value, integer_x=True, unit="count")
    return Result(value=value, unit="count", n=steps.steps, n_label="steps", basis=basis, series=series)


class StepArgs(RecipeArgs):
    """Arguments of trace.step_ms."""

    package: PackageId
    """A profile package (`audit trace`) with per-step figures."""
    statistic: Statistic = "median"
    """Over the selected steps: `median`, `min` or `max`."""
    span: Literal["markers", "gpu_window"] = "markers"
    """`markers`: marker start to the next marker's start (CPU clock); `gpu_window`: the step's first GPU activity
    to the next step's."""


@recipe("trace.step_ms", unit="ms")
def step_ms(args: StepArgs, ctx: Context) -> Result:
    """Duration of a step between step markers, in ms (median, shortest or longest over the selected steps)."""
    loaded, how = profile(ctx, args.package)
    steps = _steps(args.package, loaded)
    d = steps.step_us if args.span == "markers" else steps.gpu_window_us
    us = {"median": d.median_us, "min": d.min_us, "max": d.max_us}[args.statistic]
    spans = ((r.step, r.duration_us if args.span == "markers" else r.gpu_window_us) for r in loaded.steps
             if r.selected)
    points = tuple((float(step), span / 1000) for step, span in spans if span is not None)
    what = "marker to marker" if args.span == "markers" else "GPU window"
    basis = (f"{what}: median {d.median_us / 1000:.3f} ms, {d.min_us / 1000:.3f}–{d.max_us / 1000:.3f} ms over "
             f"{_where(loaded.summary, steps)}; {how}")
    series = Series(title=f"step duration, {what}", xlabel="step", ylabel="ms", lines=(("selected steps", points),),
                    style="dots", center=us / 1000, integer_x=True, unit="ms")
    return Result(value=us / 1000, unit="ms", n=d.count, n_label="steps", basis=basis, series=series)


class TotalArgs(RecipeArgs):
    """Arguments of trace.kernels_over_markers."""

    package: PackageId
    """A profile package (`audit trace`)."""


@recipe("trace.kernels_over_markers", unit="count")
def kernels_over_markers(args: TotalArgs, ctx: Context) -> Result:
    """The whole trace's kernel count divided by its number of step markers: the "kernels per step" a reader gets
    without counting between markers (prefill, idle steps and work outside any step all land in it). Kept to
    reproduce a published figure (a retraction's `published_recipe`), never to measure one."""
    loaded, how = profile(ctx, args.package)
    s = loaded.summary
    if s.markers.found == 0:
        raise RecipeFailed(f"{args.package}: no step marker matches {s.config.step_marker}")
    basis = (f"{s.trace.kernels:,} kernels in the whole trace / {s.markers.found} markers "
             f"{s.config.step_marker}; {how}")
    return Result(value=s.trace.kernels / s.markers.found, unit="count", basis=basis)

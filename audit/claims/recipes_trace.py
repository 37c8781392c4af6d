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

from typing import Any, Literal

from audit.claims.registry import Context, PackageId, RecipeArgs, RecipeFailed, Result, Series, memo, recipe


def profile(ctx: Context, ident: str, recipe_name: str) -> tuple[Any, str]:
    """The profile package `ident` read by its kind (`audit.trace.package.read_checked`: recomputed from its trace
    when it holds it, else cross-checked against its steps); returns (loaded, how the figures were checked)."""
    from audit.trace.package import PROFILE, read_checked

    pkg = ctx.package_of_kind(ident, PROFILE.name, recipe_name)

    def checked() -> tuple[Any, str]:
        c = read_checked(pkg, ident)
        return c.loaded, c.how

    with ctx.reading(ident):
        return memo(("trace.profile", pkg.digest), checked)


def _steps(ident: str, loaded: Any) -> Any:
    s = loaded.summary
    if s.steps is None:
        why = s.markers.refused or "no complete step"
        raise RecipeFailed(f"{ident} has no per-step figures: {why}")
    return s.steps


def _where(s: Any) -> str:
    flt = f", filter {s.config.step_filter}" if s.config.step_filter else ""
    return (f"{s.steps.steps} selected of {s.markers.complete_steps} complete steps between {s.markers.found} "
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
    loaded, how = profile(ctx, args.package, "trace.kernels_per_step")
    steps = _steps(args.package, loaded)
    if args.stream is None:
        spread, label = steps.kernels_per_step, "all streams"
    else:
        spread = steps.kernels_per_step_by_stream.get(args.stream)
        if spread is None:
            known = ", ".join(sorted(steps.kernels_per_step_by_stream)) or "none"
            raise RecipeFailed(f"{args.package} has no stream {args.stream!r} (streams: {known})")
        label = f"stream {args.stream}"
    value = float(getattr(spread, args.statistic))
    selected = [r for r in loaded.steps if r.selected]
    counts = [float(r.kernels if args.stream is None else r.kernels_by_stream.get(args.stream, 0)) for r in selected]
    s = loaded.summary
    graphs = s.cuda_graphs
    basis = (f"{label}: median {spread.median:g}, {spread.min}–{spread.max} over {_where(s)}; "
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
    loaded, how = profile(ctx, args.package, "trace.step_ms")
    steps = _steps(args.package, loaded)
    d = steps.step_us if args.span == "markers" else steps.gpu_window_us
    us = {"median": d.median_us, "min": d.min_us, "max": d.max_us}[args.statistic]
    selected = [r for r in loaded.steps if r.selected]
    points = tuple((float(r.step), (r.duration_us if args.span == "markers" else r.gpu_window_us) / 1000)
                   for r in selected if (r.duration_us if args.span == "markers" else r.gpu_window_us) is not None)
    what = "marker to marker" if args.span == "markers" else "GPU window"
    basis = (f"{what}: median {d.median_us / 1000:.3f} ms, {d.min_us / 1000:.3f}–{d.max_us / 1000:.3f} ms over "
             f"{_where(loaded.summary)}; {how}")
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
    loaded, how = profile(ctx, args.package, "trace.kernels_over_markers")
    s = loaded.summary
    if s.markers.found == 0:
        raise RecipeFailed(f"{args.package}: no step marker matches {s.config.step_marker}")
    basis = (f"{s.trace.kernels:,} kernels in the whole trace / {s.markers.found} markers "
             f"{s.config.step_marker}; {how}")
    return Result(value=s.trace.kernels / s.markers.found, unit="count", basis=basis)

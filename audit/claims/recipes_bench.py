"""Throughput and counter recipes: `bench.*` on `throughput` packages, `telemetry.*` on `telemetry` packages.

Every figure comes from `audit.bench`'s own code: `store.read_throughput` (what `store.open_throughput`
runs on the package verify validated) recomputes its summary from `requests.jsonl` and `windows.jsonl`
(a stored summary that differs from its rows is an error, never a value), `figures.compare` pairs two
arms by window as `audit bench compare` does, and `store.read_telemetry` recomputes the per-window
counter means from the samples and checks the link to its throughput run by content digest. Nothing
here re-derives a figure.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Literal

from audit.claims.registry import Context, PackageId, RecipeArgs, RecipeFailed, Result, Series, recipe
from audit.verdicts.models import Interval

if TYPE_CHECKING:
    from audit.bench.figures import WindowFigures
    from audit.bench.rows import GpmSampleRow, GpuSampleRow
    from audit.bench.store import Telemetry, Throughput


def throughput(ctx: Context, ident: str) -> Throughput:
    """The throughput package `ident`, read back by its kind (summary recomputed from the rows: a summary.json
    that is not what the rows give is refused)."""
    from audit.bench.store import THROUGHPUT

    return ctx.read(ident, THROUGHPUT)


def telemetry(ctx: Context, ident: str, run: str | None) -> Telemetry:
    """The telemetry package `ident`, its figures recomputed from the samples; refused unless it belongs to
    the throughput package `run`, when given."""
    from audit.bench.store import TELEMETRY

    return ctx.read(ident, TELEMETRY, linked=run)


def _valid_windows(t: Throughput, ident: str) -> list[WindowFigures]:
    valid = [w for w in t.summary.windows if w.valid]
    if not valid:
        raise RecipeFailed(f"{ident} has no valid window (see `audit bench report`)")
    return valid


def _window_series(title: str, arms: list[tuple[str, Throughput]], **kw: Any) -> Series:
    lines = tuple((label, tuple((float(w.window), w.tok_s) for w in t.summary.windows if w.valid))
                  for label, t in arms)
    return Series(title=title, xlabel="window", ylabel="tok/s", lines=lines, style="line+dots", integer_x=True,
                  y_range=(0.0, None), unit="tok/s", **kw)


def _windows_2se(mean: float, se: float | None, what: str) -> Interval | None:
    if se is None:
        return None
    return Interval(method="windows_2se", formula=f"mean ± 2·sd/√n over the valid windows' {what}",
                    low=mean - 2 * se, high=mean + 2 * se, se=se)


# --------------------------------------------------------------------------- bench.*


class ArmArgs(RecipeArgs):
    """Arguments of the one-arm throughput recipes."""

    package: PackageId
    """A throughput package (`audit bench throughput`)."""


@recipe("bench.tok_s", unit="tok/s")
def bench_tok_s(args: ArmArgs, ctx: Context) -> Result:
    """An arm's tok/s: generated tokens over window time (TTFT included), mean over the valid windows with its
    2·se interval across windows."""
    t = throughput(ctx, args.package)
    valid = _valid_windows(t, args.package)
    s = t.summary.tok_s
    assert s.mean is not None
    iv = _windows_2se(s.mean, s.se, "tok/s")
    per = ", ".join(f"{w.tok_s:.1f}" for w in valid)
    left_out = len(t.summary.windows) - len(valid)
    basis = (f"arm {t.summary.arm}: {sum(w.tokens for w in valid):,} tokens in {len(valid)} valid windows of "
             f"{valid[0].duration_s:g} s ({per} tok/s)")
    if left_out:
        basis += f"; {left_out} invalid window(s) left out"
    return Result(value=s.mean, unit="tok/s", interval=iv, n=s.n, n_label="windows", basis=basis,
                  series=_window_series(f"{t.summary.arm}: tok/s per window", [(t.summary.arm, t)],
                                        band=(iv.low, iv.high) if iv else None, center=s.mean))


class RatioArgs(RecipeArgs):
    """Arguments of bench.ratio."""

    a: PackageId
    """The numerator arm's throughput package (e.g. CUDA graphs)."""
    b: PackageId
    """The denominator arm's throughput package (e.g. eager)."""
    figure: Literal["tok_s", "decode", "ttft_median"] = "tok_s"
    """`tok_s`: tok/s paired by window (mean of the per-window ratios, ±2·se, worst to best pair); `decode`:
    mean per-request decode rates after the first token, A over B; `ttft_median`: median TTFT, A over B."""


@recipe("bench.ratio", unit="ratio")
def bench_ratio(args: RatioArgs, ctx: Context) -> Result:
    """Arm A over arm B, paired by window as `audit bench compare A B` pairs them: the mean of the per-window
    tok/s ratios with ±2·se across pairs and the worst and best pair."""
    from audit.bench import figures

    ta, tb = throughput(ctx, args.a), throughput(ctx, args.b)
    c = figures.compare(args.a, ta.summary, ta.extra.get("run", {}), args.b, tb.summary, tb.extra.get("run", {}))
    arms = f"{c.a_arm} / {c.b_arm}"
    notes = "".join(f"; note: {n}" for n in c.notes)
    series = _window_series(f"tok/s per window: {c.a_arm} and {c.b_arm}", [(c.a_arm, ta), (c.b_arm, tb)])
    if args.figure != "tok_s":
        value = c.decode_ratio if args.figure == "decode" else c.ttft_ratio
        if value is None:
            raise RecipeFailed(f"{arms}: no {args.figure} figure on one side")
        what = ("mean decode rate after the first token" if args.figure == "decode" else "median TTFT")
        return Result(value=value, unit="ratio", basis=f"{arms}, {what}{notes}", series=series)
    if c.ratio_mean is None:
        raise RecipeFailed(f"{arms}: no window pair where both windows are valid ({'; '.join(c.skipped)})")
    iv = None
    if c.ratio_se is not None:
        iv = Interval(method="paired_windows_2se", formula="mean ± 2·sd/√n of the per-window ratios A/B, windows "
                      "paired by index", low=c.ratio_mean - 2 * c.ratio_se, high=c.ratio_mean + 2 * c.ratio_se,
                      se=c.ratio_se)
    pairs = ", ".join(f"{p.ratio:.3f}×" for p in c.pairs)
    basis = (f"{arms} tok/s paired by window: {pairs}; worst to best pair {c.ratio_min:.3f}–{c.ratio_max:.3f}×"
             + "".join(f"; skipped {s}" for s in c.skipped) + notes)
    return Result(value=c.ratio_mean, unit="ratio", interval=iv, n=len(c.pairs), n_label="window pairs", basis=basis,
                  series=series)


class DecodeArgs(ArmArgs):
    """Arguments of bench.decode_tok_s."""

    statistic: Literal["overall", "mean", "min", "max"] = "overall"
    """`overall`: total decode tokens over total decode time; `mean`, `min`, `max`: over requests of each
    request's (tokens − 1) / (last token − first token)."""


@recipe("bench.decode_tok_s", unit="tok/s")
def bench_decode_tok_s(args: DecodeArgs, ctx: Context) -> Result:
    """Decode rate after the first token (TTFT left out), over the requests started in valid windows."""
    t = throughput(ctx, args.package)
    d = t.summary.decode
    value = {"overall": d.overall_tok_s, "mean": d.per_request_mean, "min": d.per_request_min,
             "max": d.per_request_max}[args.statistic]
    if value is None:
        raise RecipeFailed(f"{args.package}: no request with two tokens at distinct times in a valid window")
    basis = (f"arm {t.summary.arm}: {d.tokens:,} decode tokens / {d.seconds:.3f} s = {d.overall_tok_s:.2f} tok/s "
             f"overall; per request mean {d.per_request_mean:.2f}, min {d.per_request_min:.2f}, max "
             f"{d.per_request_max:.2f} tok/s ({d.requests} requests)")
    return Result(value=value, unit="tok/s", n=d.requests, n_label="requests", basis=basis)


@recipe("bench.ttft_median", unit="ms")
def bench_ttft_median(args: ArmArgs, ctx: Context) -> Result:
    """Median time to first token (by token: the first chunk that carried one) of the requests started in
    valid windows."""
    t = throughput(ctx, args.package)
    f = t.summary.ttft
    if f.median_ms is None:
        raise RecipeFailed(f"{args.package}: no request got a token in a valid window")
    basis = f"arm {t.summary.arm}: median of {f.requests} requests' TTFT (mean {f.mean_ms:.2f} ms)"
    return Result(value=f.median_ms, unit="ms", n=f.requests, n_label="requests", basis=basis)


class AnchorArgs(ArmArgs):
    """Arguments of bench.anchor_ratio."""

    figure: Literal["tok_s", "ttft_median"] = "tok_s"
    """`tok_s`: our mean tok/s over the anchor's output throughput; `ttft_median`: our median TTFT over its."""


@recipe("bench.anchor_ratio", unit="ratio")
def bench_anchor_ratio(args: AnchorArgs, ctx: Context) -> Result:
    """Ours over the anchor: the same server measured in the same run by `vllm bench serve` (its saved result,
    `anchor.json`, inside the package)."""
    t = throughput(ctx, args.package)
    a = t.summary.anchor
    if a is None:
        raise RecipeFailed(f"{args.package} holds no anchor result (the run measured no `vllm bench serve`)")
    ours_ttft = t.summary.ttft.median_ms
    value: float | None
    theirs: float | None
    ours: float | None
    if args.figure == "tok_s":
        value, theirs, ours = a.ours_over_anchor_tok_s, a.output_tok_s, t.summary.tok_s.mean
        basis = f"ours {ours:.2f} tok/s (mean of the valid windows) / {a.tool} {theirs:.2f} tok/s"
    else:
        value, theirs, ours = a.ours_over_anchor_ttft_median, a.ttft_median_ms, ours_ttft
        basis = f"ours {ours:.2f} ms / {a.tool} {theirs:.2f} ms (median TTFT)" if theirs and ours else ""
    if value is None:
        raise RecipeFailed(f"{args.package}: no {args.figure} figure on one side")
    basis += (f"; {a.tool}: {a.completed} requests, mean prompt {a.mean_input_tokens:.0f} and output "
              f"{a.mean_output_tokens:.0f} tokens") if a.mean_input_tokens and a.mean_output_tokens else ""
    series = None
    if args.figure == "tok_s":
        series = _window_series(f"{t.summary.arm}: ours per window against {a.tool}", [("audit bench", t)],
                                reference=a.output_tok_s, reference_label=a.tool)
    return Result(value=value, unit="ratio", basis=basis, series=series)


class SpecArgs(ArmArgs):
    """Arguments of bench.spec."""

    figure: Literal["acceptance_rate", "mean_acceptance_length", "draft_tokens", "accepted_tokens"] = "acceptance_rate"
    """From the server's speculative-decoding counters over the valid windows: `acceptance_rate` (accepted /
    draft tokens, a fraction), `mean_acceptance_length` (1 + accepted / drafts, tokens), or the token counts."""


def _spec_unit(args: SpecArgs) -> str:
    return "fraction" if args.figure == "acceptance_rate" else "tokens"


@recipe("bench.spec", unit="fraction | tokens (by figure)", unit_of=_spec_unit)
def bench_spec(args: SpecArgs, ctx: Context) -> Result:
    """Speculative decoding as the server counted it (`/metrics` read at each window edge): acceptance rate,
    mean acceptance length, draft and accepted tokens."""
    t = throughput(ctx, args.package)
    sp = t.summary.spec
    if sp is None:
        raise RecipeFailed(f"{args.package}: the server reported no speculative decoding")
    value = getattr(sp, args.figure)
    if value is None:
        raise RecipeFailed(f"{args.package}: {args.figure} is undefined (no draft)")
    basis = (f"arm {t.summary.arm}: {sp.accepted_tokens:,.0f} of {sp.draft_tokens:,.0f} draft tokens accepted in "
             f"{sp.drafts:,.0f} drafts over the valid windows")
    return Result(value=float(value), unit=_spec_unit(args), basis=basis)


class StepArgs(ArmArgs):
    """Arguments of bench.steps."""

    figure: Literal["tokens_per_step", "at_ceiling", "requests", "overall_over_counters"] = "tokens_per_step"
    """From the stream (each chunk one engine step of its request): `tokens_per_step` (decode tokens / decode
    chunks over the counted requests), `at_ceiling` (requests whose every decode chunk but the last carried
    k + 1 tokens), `requests` (requests counted), `overall_over_counters` (tokens_per_step over the counters'
    1 + accepted / drafts)."""


@recipe("bench.steps", unit="tokens | count | ratio (by figure)",
        unit_of=lambda a: {"tokens_per_step": "tokens", "overall_over_counters": "ratio"}.get(a.figure, "count"))
def bench_steps(args: StepArgs, ctx: Context) -> Result:
    """Per-request acceptance read from the stream: tokens per engine step and requests at the ceiling, with
    the server's spec-decode counters beside it (`audit.bench.figures.step_figures`)."""
    from audit.bench import figures

    t = throughput(ctx, args.package)
    st = figures.step_figures(t.summary, t.requests)
    value = {"tokens_per_step": st.overall, "at_ceiling": st.at_ceiling, "requests": st.requests,
             "overall_over_counters": st.overall_over_counters}[args.figure]
    if value is None:
        raise RecipeFailed(f"{args.package}: {args.figure} is undefined (no decode chunk, or no speculative-decoding "
                           "counters to give the ceiling)")
    ceiling = (f"; {st.at_ceiling} of {st.requests} requests at the ceiling of {st.ceiling} tokens per step"
               if st.ceiling is not None else "")
    counters = f"; counters {st.counters_tokens_per_step:.3f}" if st.counters_tokens_per_step is not None else ""
    basis = (f"arm {t.summary.arm}: {st.overall:.3f} tokens per decode chunk over {st.requests} requests"
             if st.overall is not None else f"arm {t.summary.arm}") + ceiling + counters
    unit = {"tokens_per_step": "tokens", "overall_over_counters": "ratio"}.get(args.figure, "count")
    return Result(value=float(value), unit=unit, n=st.requests, n_label="requests", basis=basis)


# --------------------------------------------------------------------------- telemetry.*

PERCENT_COUNTERS = {
    "kernel_running_pct": ("mean_kernel_running_pct", "utilization.gpu (time any kernel ran)"),
    "memory_busy_pct": ("mean_memory_busy_pct", "utilization.memory"),
    "sm_util_pct": ("mean_sm_util_pct", "GPM SM_UTIL (share of SMs busy)"),
    "sm_occupancy_pct": ("mean_sm_occupancy_pct", "GPM SM_OCCUPANCY"),
    "any_tensor_util_pct": ("mean_any_tensor_util_pct", "GPM ANY_TENSOR_UTIL"),
    "dram_bw_util_pct": ("mean_dram_bw_util_pct", "GPM DRAM_BW_UTIL"),
}
"""Counter → (field of `WindowTelemetry`: the mean over GPUs of each GPU's window mean, its name)."""
SUMMED_COUNTERS = {"power_w": ("power_w_sum_over_gpus", "power, summed over GPUs", "W")}
"""Counter → (field of `WindowTelemetry`: the sum over GPUs, its name, unit)."""
Counter = Literal["kernel_running_pct", "memory_busy_pct", "sm_util_pct", "sm_occupancy_pct", "any_tensor_util_pct",
                  "dram_bw_util_pct", "power_w"]


class TelemetryArgs(RecipeArgs):
    """Arguments of telemetry.mean."""

    package: PackageId
    """A telemetry package (`audit bench throughput` writes it beside the throughput package)."""
    counter: Counter
    """`kernel_running_pct` (NVML utilization.gpu), `memory_busy_pct`, GPM `sm_util_pct`, `sm_occupancy_pct`,
    `any_tensor_util_pct`, `dram_bw_util_pct` (percent, mean over GPUs), or `power_w` (W, summed over GPUs)."""
    run: PackageId | None = None
    """The throughput package of the run: checked to be the one the telemetry names (by content digest), and
    its invalid windows left out. Without it every window of the telemetry counts."""


def _counter_unit(args: TelemetryArgs) -> str:
    return SUMMED_COUNTERS[args.counter][2] if args.counter in SUMMED_COUNTERS else "percent"


@recipe("telemetry.mean", unit="percent | W (by counter)", unit_of=_counter_unit)
def telemetry_mean(args: TelemetryArgs, ctx: Context) -> Result:
    """A GPU counter over the run: the mean over its windows of each window's value (per-window means recomputed
    from the samples), with its 2·se interval across windows."""
    from audit.bench.figures import spread

    tel = telemetry(ctx, args.package, args.run)
    field, name = (PERCENT_COUNTERS[args.counter] if args.counter in PERCENT_COUNTERS
                   else SUMMED_COUNTERS[args.counter][:2])
    windows = tel.summary.windows
    scope = "every window"
    if args.run is not None:
        valid = {w.window for w in _valid_windows(throughput(ctx, args.run), args.run)}
        windows = [w for w in windows if w.window in valid]
        scope = "the run's valid windows"
    missing = [w.window for w in windows if getattr(w, field) is None]
    if not windows or missing:
        why = f"no reading in window(s) {', '.join(map(str, missing))}" if missing else "no window"
        status = tel.extra.get("status")
        raise RecipeFailed(f"{args.package}: {args.counter}: {why} (counters {status}; a counter not read is "
                           f"never taken as zero)")
    values = [getattr(w, field) for w in windows]
    s = spread(values)
    assert s.mean is not None
    unit = _counter_unit(args)
    iv = _windows_2se(s.mean, s.se, name)
    shown = ", ".join(f"{v:.2f}" for v in values)
    basis = f"{name} over {scope} of {tel.summary.throughput_package_id}: {shown} ({tel.summary.gpus} GPU)"
    return Result(value=s.mean, unit=unit, interval=iv, n=s.n, n_label="windows", basis=basis,
                  series=_counter_timeline(tel, args.counter, name))


def _counter_timeline(tel: Telemetry, counter: str, name: str) -> Series | None:
    """The samples behind the figure, over the windows: utilization.gpu against SM_UTIL and DRAM_BW_UTIL side by
    side for a percent counter (the three tell "a kernel was running" from "the SMs and DRAM were busy"); the
    power for power_w."""
    from audit.bench.telemetry import mean

    windows = tel.summary.windows
    if not windows:
        return None
    t0, t1 = windows[0].start, windows[-1].end
    by_t: dict[float, list[GpuSampleRow]] = defaultdict(list)
    for r in tel.gpu_rows:
        if t0 <= r.t < t1:
            by_t[r.t].append(r)
    gpm: dict[tuple[float, float], list[GpmSampleRow]] = defaultdict(list)
    for g in tel.gpm_rows:
        if t0 <= (g.t_start + g.t_end) / 2 < t1:
            gpm[(g.t_start, g.t_end)].append(g)

    def legacy(attr: str) -> tuple[tuple[float, float], ...]:
        pts = []
        for t in sorted(by_t):
            m = mean([getattr(r, attr) for r in by_t[t] if getattr(r, attr) is not None])
            if m is not None:
                pts.append((t - t0, m))
        return tuple(pts)

    def gpm_line(attr: str) -> tuple[tuple[float, float], ...]:
        pts = []
        for a, b in sorted(gpm):
            m = mean([getattr(r, attr) for r in gpm[(a, b)] if getattr(r, attr) is not None])
            if m is not None:
                pts.append(((a + b) / 2 - t0, m))
        return tuple(pts)

    lines: tuple[tuple[str, tuple[tuple[float, float], ...]], ...]
    if counter == "power_w":
        lines = (("power, W (mean over GPUs)", legacy("power_w")),)
        return Series(title="power during the windows", xlabel="seconds from the first window", ylabel="W",
                      lines=lines, y_range=(0.0, None), unit="W") if lines[0][1] else None
    lines = tuple((label, pts) for label, pts in (
        ("utilization.gpu: any kernel running", legacy("kernel_running_pct")),
        ("SM_UTIL: share of SMs busy", gpm_line("sm_util_pct")),
        ("DRAM_BW_UTIL", gpm_line("dram_bw_util_pct")),
    ) if pts)
    if counter not in ("kernel_running_pct", "sm_util_pct", "dram_bw_util_pct"):
        extra = legacy(counter) if counter == "memory_busy_pct" else gpm_line(counter)
        if extra:
            lines += ((name, extra),)
    if not lines:
        return None
    short = name.split(" (")[0]
    return Series(title=f"{tel.summary.throughput_package_id}: {short} beside the other counters",
                  xlabel="seconds from the first window", ylabel="percent (mean over GPUs)", lines=lines,
                  y_range=(0.0, 105.0), unit="percent")

"""Text renderings of a trace summary and of a trace diff (the JSON forms are the models)."""

from __future__ import annotations

from audit.trace.models import StepSpread, TraceDiff, TraceSummary

NAME_WIDTH = 72


def fmt_us(us: float | None) -> str:
    """A duration in the unit that reads best: µs under 1 ms, ms under 1 s, else s."""
    if us is None:
        return "-"
    if abs(us) < 1000:
        return f"{us:,.3f} µs"
    if abs(us) < 1_000_000:
        return f"{us / 1000:,.3f} ms"
    return f"{us / 1_000_000:,.3f} s"


def short(name: str, width: int = NAME_WIDTH) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _spread(s: StepSpread) -> str:
    if s.constant:
        return f"{s.min:,} (constant)"
    return f"median {s.median:,g}, {s.min:,} to {s.max:,}"


def render_summary(s: TraceSummary) -> str:
    lines: list[str] = []
    add = lines.append
    src = s.source
    kept = (f"copied into the package as {src.included}" if src.included
            else "pinned by sha256 (not copied: over the limit)")
    gz = " (gzip)" if src.gzip else ""
    add(f"trace       {src.file}: {src.bytes:,} bytes{gz}, sha256 {src.sha256[:16]}…, {kept}")
    t = s.trace
    where = []
    if t.rank is not None:
        where.append(f"rank {t.rank}" + (f" of {t.world_size}" if t.world_size is not None else ""))
    where.append("GPU " + ", ".join(t.devices))
    add(f"            {'; '.join(where)}")
    ln = s.linking
    add(f"events      {t.events:,}: {t.kernels:,} kernels ({t.kernel_names:,} names), {t.memcpy:,} memcpy, "
        f"{t.memset:,} memset")
    linked = ln.by_correlation + ln.by_flow
    via = f"{ln.by_correlation:,} by correlation id" + (f", {ln.by_flow:,} by ac2g flow" if ln.by_flow else "")
    add(f"launches    {linked:,} of {ln.gpu_events:,} GPU events matched to their launching CPU event ({via})")
    m = s.markers
    pattern = f"/{s.config.step_marker}/"
    if m.found:
        span = m.first if m.found == 1 else f"{m.first} … {m.last}"
        add(f"markers     {m.found:,} matching {pattern} on thread {m.thread}: {span}")
    else:
        add(f"markers     none matching {pattern} among {', '.join(s.config.marker_categories)} events")
    if s.steps is None:
        add(f"steps       per-step figures refused: {m.refused}")
    else:
        st = s.steps
        filt = f" ({m.selected_steps:,} selected by /{s.config.step_filter}/)" if s.config.step_filter else ""
        if s.config.step_span == "marker":
            add(f"steps       {m.complete_steps:,}, each a marker's own span (--step-span marker){filt}; GPU events "
                f"launched before the first marker: {m.gpu_events_before_first:,}, after the last one's span: "
                f"{m.gpu_events_after_last:,}")
        else:
            add(f"steps       {m.complete_steps:,} complete{filt}; GPU events launched before the first marker: "
                f"{m.gpu_events_before_first:,}, after the last (a step without an end): {m.gpu_events_after_last:,}")
        by_stream = ", ".join(f"{k}: {_spread(v)}" for k, v in st.kernels_per_step_by_stream.items())
        add(f"kernels     per step: {_spread(st.kernels_per_step)}; by stream {by_stream}")
        span = "marker's span" if s.config.step_span == "marker" else "marker to marker"
        add(f"step time   median {fmt_us(st.step_us.median_us)} ({span}), GPU window median "
            f"{fmt_us(st.gpu_window_us.median_us)}")
        add(f"kernel time median {fmt_us(st.kernel_us.median_us)} over {st.kernel_us.count:,} kernels")
    ms = s.main_stream
    if ms is not None:
        over = "the selected steps' GPU windows" if ms.window == "steps" else "first to last GPU activity"
        add(f"main stream {ms.stream} ({ms.chosen}): busy {ms.busy_fraction:.2%} of {fmt_us(ms.window_us)} "
            f"({over}); {ms.gaps:,} gaps, median {fmt_us(ms.gap_median_us)}, longest {fmt_us(ms.gap_max_us)}")
        add("            gaps " + ", ".join(f"{k}: {v:,}" for k, v in ms.gap_histogram.items()))
    g = s.cuda_graphs
    if g.graph_launches:
        per_step = f"; launches per step: {_spread(g.launches_per_step)}" if g.launches_per_step else ""
        per_launch = _spread(g.kernels_per_launch) if g.kernels_per_launch else ""  # set whenever there are launches
        add(f"cuda graphs {g.graph_launches:,} launches ran {g.kernels:,} kernels; kernels per launch: "
            f"{per_launch}{per_step}")
    else:
        add("cuda graphs none")
    if s.collectives:
        add("collectives per position in the step (median over the steps that have a call there):")
        for ck in s.collectives:
            add(f"  {ck.kind}: calls per step: {_spread(ck.calls_per_step)}")
            for p in ck.positions:
                add(f"    #{p.position:<3} {fmt_us(p.median_us):>14}  ({_plural(p.steps, 'step')}, "
                    f"{fmt_us(p.min_us)} to {fmt_us(p.max_us)})  {short(p.name, 60)}")
    for note in s.notes:
        add(f"note: {note}")
    return "\n".join(lines) + "\n"


def render_diff(d: TraceDiff, top: int | None = 40) -> str:
    lines: list[str] = []
    add = lines.append
    unit = "per step" if d.basis == "per_step" else "whole trace"
    add(f"A  {d.a.label}  (sha256 {d.a.source_sha256[:16]}…, {_plural(d.a.steps, 'step')})")
    add(f"B  {d.b.label}  (sha256 {d.b.source_sha256[:16]}…, {_plural(d.b.steps, 'step')})")
    add(f"basis: {unit}; {d.count_changes:,} of {len(d.rows):,} kernel names changed count")
    add(f"{'count A':>10} {'count B':>10} {'Δcount':>9} {'time A':>13} {'time B':>13} {'Δtime':>13}  name")
    shown = d.rows if top is None else d.rows[:top]
    for r in shown:
        dc = r.count_b - r.count_a
        add(f"{_count(r.count_a):>10} {_count(r.count_b):>10} {_count(dc, signed=True):>9} {fmt_us(r.time_a_us):>13} "
            f"{fmt_us(r.time_b_us):>13} {_signed(r.time_b_us - r.time_a_us):>13}  {short(r.name, 60)}"
            + ("" if r.category == "kernel" else f" [{r.category}]"))
    if len(shown) < len(d.rows):
        add(f"… {len(d.rows) - len(shown):,} more (--top 0 for all, --format json for every row)")
    return "\n".join(lines) + "\n"


def _count(n: float, signed: bool = False) -> str:
    text = f"{abs(n):,.0f}" if float(n).is_integer() else f"{abs(n):,.3f}"
    return ("+" if signed and n > 0 else "-" if n < 0 else "") + text


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _signed(us: float) -> str:
    text = fmt_us(abs(us))
    return ("+" if us > 0 else "-" if us < 0 else "") + text

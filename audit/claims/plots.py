"""Small plots for the measurements page: the same bytes for the same numbers.

matplotlib with the Agg canvas (no display, no pyplot state), its bundled DejaVu Sans,
fixed size and resolution, and no `Software` or time in the PNG's metadata: a PNG
depends only on the numbers and the matplotlib version. Three kinds:
- an accuracy (or any value) with its interval, and the recorded value marked;
- before and after a retraction, each with its interval;
- a `Series` a recipe attached (per-task ratios; tok/s per window for two arms).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audit.claims import units
from audit.claims.registry import Series

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

DPI = 100
RC: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.unicode_minus": True,
    "svg.hashsalt": "audit",
    "text.hinting": "default",
    "path.simplify": True,
}
INK, MUTED, OLD, NEW, BAD = "#1f2933", "#7b8794", "#b44d4d", "#2f6f9f", "#b44d4d"
SEGMENT_COLOURS = {"BF16": NEW, "F8_E4M3": "#3e7c4f", "F32": "#8a6d3b"}
"""Bar segments named alike get the same colour on every plot (a dtype is blue here and blue there)."""


def _new_figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path) -> None:
    # No Software key and no time: the bytes depend on the numbers only. SOURCE_DATE_EPOCH is set for the
    # formats that would write a date (PDF, PS, SVG), so a later change of format stays reproducible.
    old = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = "0"
    try:
        fig.savefig(path, format="png", dpi=DPI, metadata={"Software": None})
    finally:
        if old is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = old


def _axis_unit(unit: str) -> str:
    return {"percent": "%", "points": "percentage points", "fraction": "fraction"}.get(unit, unit)


def intervals_plot(path: Path, rows: list[tuple[str, float, float | None, float | None, str]], unit: str,
                   recorded: float | None, title: str) -> None:
    """Horizontal bars: one row per (label, value, low, high, colour); the recorded value as a dashed line."""
    import matplotlib

    with matplotlib.rc_context(RC):
        # Margins in inches, so that one row or two leave the same room for the title and the axis.
        top, row, bottom, width = 0.34, 0.36, 0.50, 5.6
        height = top + row * len(rows) + bottom
        fig = _new_figure(width, height)
        ax = fig.add_axes((1.5 / width, bottom / height, 3.9 / width, row * len(rows) / height))
        lo_all = [r[2] if r[2] is not None else r[1] for r in rows] + ([recorded] if recorded is not None else [])
        hi_all = [r[3] if r[3] is not None else r[1] for r in rows] + ([recorded] if recorded is not None else [])
        lo, hi = min(lo_all), max(hi_all)
        pad = max((hi - lo) * 0.12, abs(hi) * 0.02, 1e-9)
        if unit == "percent":
            lo, hi = max(0.0, lo - pad), min(100.0, hi + pad)
            if hi - lo < 5:
                hi = min(100.0, lo + 5)
                lo = max(0.0, hi - 5)
        else:
            lo, hi = lo - pad, hi + pad
        for i, (_label, value, low, high, colour) in enumerate(rows):
            y = len(rows) - 1 - i
            if low is not None and high is not None:
                ax.plot([low, high], [y, y], color=colour, linewidth=2.2, solid_capstyle="butt")
                ax.plot([low, low], [y - 0.18, y + 0.18], color=colour, linewidth=1.2)
                ax.plot([high, high], [y - 0.18, y + 0.18], color=colour, linewidth=1.2)
            ax.plot([value], [y], "o", color=colour, markersize=6)
        if recorded is not None:
            ax.axvline(recorded, color=MUTED, linestyle="--", linewidth=1)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([r[0] for r in reversed(rows)])
        ax.set_ylim(-0.5, len(rows) - 0.5)
        ax.set_xlim(lo, hi)
        ax.set_xlabel(_axis_unit(unit), color=MUTED)
        ax.spines["left"].set_visible(False)
        ax.tick_params(axis="y", length=0)
        ax.set_title(title, loc="left", color=INK)
        _save(fig, path)


def series_plot(path: Path, series: Series, published: tuple[str, float] | None = None) -> None:
    """A recipe's series: lines (tok/s per window per arm, counters over time) or dots (per-task ratios, per-step
    counts) with a summary band; `published` = (label, value) draws a retracted value as a red dashed line."""
    import matplotlib
    from matplotlib.ticker import MaxNLocator

    with matplotlib.rc_context(RC):
        fig = _new_figure(5.6, 2.4)
        ax = fig.add_axes((0.12, 0.2, 0.84, 0.68))
        colours = [NEW, OLD, "#3e7c4f", "#8a6d3b"]
        if published is not None or len(series.lines) > 2:  # red stays for a retracted value
            colours = [NEW, "#3e7c4f", "#8a6d3b", "#7a4f9a"]
        if series.style == "barh":
            _bars(fig, ax, series, ["#7a4f9a", "#9a6a4f", "#4f7a9a", MUTED])
            _save(fig, path)
            return
        xs_all: list[float] = []
        for i, (label, points) in enumerate(series.lines):
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            xs_all += xs
            if series.style == "dots":
                ax.plot(xs, ys, "o", color=colours[i % 4], markersize=3.5, label=label)
            elif series.style == "line+dots":
                ax.plot(xs, ys, "-o", color=colours[i % 4], linewidth=1.4, markersize=4, label=label)
            else:
                ax.plot(xs, ys, "-", color=colours[i % 4], linewidth=1.4, label=label)
        if series.band is not None and xs_all:
            ax.axhspan(series.band[0], series.band[1], color=NEW, alpha=0.12, linewidth=0)
        if series.center is not None:
            ax.axhline(series.center, color=NEW, linewidth=1.2)
        if series.reference is not None:
            ax.axhline(series.reference, color=MUTED, linestyle="--", linewidth=1, label=series.reference_label)
        if published is not None:
            ax.axhline(published[1], color=BAD, linestyle="--", linewidth=1.2, label=published[0])
        if series.log_y:
            ax.set_yscale("log")
        if series.y_range is not None:
            ax.set_ylim(*series.y_range)
        if series.integer_x:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(series.xlabel, color=MUTED)
        ax.set_ylabel(series.ylabel, color=MUTED)
        ax.set_title(series.title, loc="left", color=INK)
        if len(series.lines) > 1 or published is not None or series.reference_label:
            ax.legend(frameon=False, loc="best", fontsize=7.5)
        _save(fig, path)


def _bars(fig: Any, ax: Any, series: Series, colours: list[str]) -> None:
    """Horizontal stacked bars: categories top to bottom, each line a segment."""
    n = len(series.categories)
    left = [0.0] * n
    for i, (label, points) in enumerate(series.lines):
        widths = [0.0] * n
        for x, v in points:
            widths[int(x)] += v
        colour = SEGMENT_COLOURS.get(label, colours[i % len(colours)])
        ax.barh([n - 1 - k for k in range(n)], widths, left=left, height=0.6, color=colour, label=label)
        left = [a + b for a, b in zip(left, widths, strict=True)]  # both one per category
    ax.set_position((0.24, 0.2, 0.72, 0.68))
    ax.set_yticks(range(n))
    ax.set_yticklabels(list(reversed(series.categories)))
    ax.tick_params(axis="y", length=0)
    ax.spines["left"].set_visible(False)
    ax.set_xlabel(series.ylabel, color=MUTED)
    ax.set_title(series.title, loc="left", color=INK)
    ax.legend(frameon=False, loc="lower right", fontsize=7.5, title="held as", title_fontsize=7.5)


def claim_plot(path: Path, check: Any) -> bool:
    """Draw the plot of one claim (a `verify.ClaimCheck`) to `path`; False when it has none worth drawing."""
    claim, r = check.claim, check.result
    if r is None:
        return False
    if r.series is not None:
        published = None
        if claim.retraction is not None and r.series.unit == claim.unit and r.series.style != "barh":
            published = (f"published {units.fmt(claim.value, claim.unit)} (retracted)", claim.value)
        series_plot(path, r.series, published)
        return True
    center, iv = (r.value, r.interval) if r.interval is not None else (r.figure if r.figure else (None, None))
    if iv is None or center is None:
        return False
    # An error bar stated in points describes an accuracy: its figure is drawn in percent.
    unit = "percent" if r.interval is None and claim.unit == "points" else claim.unit
    if claim.retraction is not None:
        rows = []
        p = check.published
        if p is not None and p.interval is not None:
            rows.append(("published", p.value, p.interval.low, p.interval.high, OLD))
        else:
            rows.append(("published", claim.value, None, None, OLD))
        rows.append(("recomputed", center, iv.low, iv.high, NEW))
        intervals_plot(path, rows, unit, None, f"{claim.id}: {units.fmt(claim.value, claim.unit)} retracted → "
                                               f"{units.fmt(claim.retraction.corrected, claim.unit)}")
        return True
    if r.interval is not None:
        title = f"{claim.id}: {units.fmt(center, unit)}, {iv.method} (dashed: recorded)"
        intervals_plot(path, [("recomputed", center, iv.low, iv.high, NEW)], unit, claim.value, title)
    else:  # the value describes a figure (an error bar's half-width): draw the figure with its interval
        title = f"{claim.id}: {units.fmt(center, unit)} ± {units.fmt(r.value, claim.unit)}, {iv.method}"
        intervals_plot(path, [("accuracy", center, iv.low, iv.high, NEW)], unit, None, title)
    return True

"""`audit trace diff A B`: per-kernel-name count and time changes between two traces or profile packages.

When both sides have complete steps, counts and times are per step (each side divided by its
own number of selected steps, which its markers bound); otherwise whole-trace totals are
compared and the basis says so.
"""

from __future__ import annotations

from pathlib import Path

from audit.trace.analyze import TraceOptions, analyze
from audit.trace.models import DiffSide, KernelChange, ProfileKernelRow, TraceDiff


def _is_package(path: Path) -> bool:
    return path.is_dir() or path.name.endswith((".tar.gz", ".tgz", ".tar"))


def load_side(path: str | Path, options: TraceOptions | None = None) -> tuple[DiffSide, list[ProfileKernelRow]]:
    """Kernel rows of a profile package, or of a trace file analysed with `options`."""
    p = Path(path)
    if _is_package(p):
        from audit.trace.package import open_profile

        loaded = open_profile(p)
        summary, kernels = loaded.summary, loaded.kernels
    else:
        result = analyze(p, options)
        summary, kernels = result.summary, result.kernels
    steps = summary.steps.steps if summary.steps is not None else 0
    return DiffSide(label=str(path), source_sha256=summary.source.sha256, steps=steps), kernels


def diff_traces(a: str | Path, b: str | Path, options: TraceOptions | None = None) -> TraceDiff:
    side_a, rows_a = load_side(a, options)
    side_b, rows_b = load_side(b, options)
    na, nb = side_a.steps, side_b.steps
    per_step = bool(na and nb)
    by_a = {(r.name, r.category): r for r in rows_a}
    by_b = {(r.name, r.category): r for r in rows_b}
    changes = []
    changed = 0
    for key in sorted(set(by_a) | set(by_b)):
        ra, rb = by_a.get(key), by_b.get(key)
        if per_step:
            ca, cb = (ra.count if ra else 0), (rb.count if rb else 0)
            ta, tb = (ra.total_us if ra else 0.0), (rb.total_us if rb else 0.0)
            changed += ca * nb != cb * na  # exact: no float division in the comparison
            ca_v, cb_v, ta_v, tb_v = ca / na, cb / nb, ta / na, tb / nb
        else:
            ca, cb = (ra.count_all if ra else 0), (rb.count_all if rb else 0)
            ta_v, tb_v = (ra.total_us_all if ra else 0.0), (rb.total_us_all if rb else 0.0)
            changed += ca != cb
            ca_v, cb_v = ca, cb
        if not (ca_v or cb_v):
            continue  # a name that occurs only outside the steps on both sides
        changes.append(KernelChange(name=key[0], category=key[1], count_a=round(float(ca_v), 6),
                                    count_b=round(float(cb_v), 6), time_a_us=round(ta_v, 3),
                                    time_b_us=round(tb_v, 3)))
    changes.sort(key=lambda r: (-abs(r.time_b_us - r.time_a_us), -abs(r.count_b - r.count_a), r.name, r.category))
    return TraceDiff(a=side_a, b=side_b, basis="per_step" if per_step else "whole_trace", count_changes=changed,
                     rows=changes)

"""One row per kernel (copy, memset) name: counts and times in the selected steps and in the whole trace."""

from __future__ import annotations

import numpy as np

from audit.trace.analyze.arrays import (
    CollectiveOf,
    GpuEvents,
    Steps,
    us,
)
from audit.trace.collect import (
    CATEGORY_NAMES,
    KERNEL,
)
from audit.trace.models import (
    ProfileKernelRow,
)


def kernel_rows(names: list[str], gpu: GpuEvents, steps: Steps, coll: CollectiveOf) -> list[ProfileKernelRow]:
    """One row per kernel (copy, memset) name: counts and times in the selected steps and in the whole trace."""
    g_name, g_cat, g_dur, g_sidx, stream_labels = gpu.name, gpu.cat, gpu.dur, gpu.stream, gpu.stream_labels
    in_sel, step_of, sel_steps, g_coll = steps.in_selected, steps.step_of, steps.selected_steps, coll.of
    key = g_name * 3 + g_cat
    rows = []
    n_sel = len(sel_steps)
    # a selected step may have launched no GPU activity, so size by both
    step_pos = np.full(max(int(step_of.max()) + 1, int(sel_steps.max()) + 1 if n_sel else 0, 1), -1, dtype=np.int64)
    step_pos[sel_steps] = np.arange(n_sel)
    order = np.lexsort((g_dur, key))
    key_sorted = key[order]
    bounds = np.flatnonzero(np.diff(key_sorted)) + 1
    for grp in np.split(order, bounds):
        if len(grp) == 0:
            continue
        k = int(key[grp[0]])
        nid, cat = divmod(k, 3)
        sel = grp[in_sel[grp]]  # still sorted by duration
        d_sel = g_dur[sel]
        per_min = per_max = None
        if n_sel:
            counts = np.bincount(step_pos[step_of[sel]], minlength=n_sel)
            per_min, per_max = int(counts.min()), int(counts.max())
        cks = sorted({int(x) for x in g_coll[grp].tolist()} - {-1}) if cat == KERNEL else []
        rows.append(ProfileKernelRow(
            name=names[nid], category=CATEGORY_NAMES[cat],  # type: ignore[arg-type]  # one of the three
            collective="+".join(sorted(coll.kinds[ck] for ck in cks)) or None,
            count=int(len(sel)), total_us=us(int(d_sel.sum())),
            median_us=us(float(np.median(d_sel))) if len(sel) else None,
            min_us=us(int(d_sel[0])) if len(sel) else None, max_us=us(int(d_sel[-1])) if len(sel) else None,
            per_step_min=per_min, per_step_max=per_max, count_all=int(len(grp)),
            total_us_all=us(int(g_dur[grp].sum())),
            streams=sorted({stream_labels[int(s)] for s in g_sidx[grp].tolist()}, key=_stream_sort_key)))
    rows.sort(key=lambda r: (-r.total_us, -r.total_us_all, r.name, r.category))
    return rows


def _stream_sort_key(label: str) -> tuple[int, ...]:
    return tuple(int(x) for x in label.split(":"))

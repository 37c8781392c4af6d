"""Which CPU launch each GPU event belongs to: by correlation id, else by the ac2g flow ending on it."""

from __future__ import annotations

import numpy as np

from audit.trace.analyze.arrays import (
    GpuEvents,
    Links,
)
from audit.trace.collect import (
    _MISSING_CORRELATION,
    _Collected,
)
from audit.trace.models import (
    Linking,
)


def link_launches(c: _Collected, gpu: GpuEvents) -> tuple[Links, list[str]]:
    """Link GPU events to their launch: by correlation id, else by the ac2g flow ending on the event; and the
    note on those without one."""
    corr = np.frombuffer(c.g_corr, dtype=np.int64).copy()
    by_flow = disagreements = 0
    thread = np.frombuffer(c.g_thread, dtype=np.int64)
    for t, by_ts in c.flow_ends.items():  # the flow ending on each event's (thread, start), by thread
        on_t = np.flatnonzero(thread == t)
        if not len(on_t) or not by_ts:
            continue
        flow_ts = np.fromiter(by_ts.keys(), dtype=np.int64, count=len(by_ts))
        flow_id = np.fromiter(by_ts.values(), dtype=np.int64, count=len(by_ts))
        order = np.argsort(flow_ts)
        flow_ts, flow_id = flow_ts[order], flow_id[order]
        j = np.minimum(np.searchsorted(flow_ts, gpu.ts[on_t]), len(flow_ts) - 1)
        hit = flow_ts[j] == gpu.ts[on_t]
        on_t, fid = on_t[hit], flow_id[j[hit]]
        missing = corr[on_t] == _MISSING_CORRELATION
        corr[on_t[missing]] = fid[missing]
        by_flow += int(missing.sum())
        disagreements += int((fid[~missing] != corr[on_t[~missing]]).sum())
    get = c.launches.get
    launch_ts = np.array([get(x, -1) for x in corr.tolist()], dtype=np.int64)
    linked = launch_ts != -1
    n_linked = int(linked.sum())
    linking = Linking(launch_events=len(c.launches), gpu_events=gpu.count, by_correlation=n_linked - by_flow,
                      by_flow=by_flow, unlinked=gpu.count - n_linked, flow_disagreements=disagreements)
    return Links(corr=corr, launch_ts=launch_ts, linked=linked, linking=linking), _linking_notes(linking)


def _linking_notes(linking: Linking) -> list[str]:
    if not linking.unlinked:
        return []
    return [f"{linking.unlinked:,} of {linking.gpu_events:,} GPU events have no launching CPU event in the trace "
            f"(launched before profiling started, or events dropped): they count in whole-trace totals "
            f"only, never in a step"]

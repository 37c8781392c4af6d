"""Each kernel's collective kind (by name, then by the communication op enclosing its launch), and each step's
collectives by position."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter

import numpy as np

from audit.trace.analyze.arrays import (
    CollectiveOf,
    GpuEvents,
    Links,
    Steps,
    spread,
    us,
)
from audit.trace.analyze.options import TraceOptions
from audit.trace.collect import (
    _Collected,
)
from audit.trace.models import (
    CollectiveKind,
    CollectivePosition,
    ProfileCollectiveRow,
)

_NCCL_KERNEL = re.compile(r"^(?:void\s+)?[nr]ccl", re.IGNORECASE)


def classify_collectives(c: _Collected, options: TraceOptions, gpu: GpuEvents, links: Links,
                        collective_res: list[tuple[str, re.Pattern[str]]]) -> tuple[CollectiveOf, list[str]]:
    """Each kernel's collective kind: by its name's family, then (analysis 2) NCCL/RCCL kernels by the
    communication op enclosing their launch; and the note on NCCL/RCCL kernels left unclassified."""
    notes: list[str] = []
    kinds = [k for k, _ in collective_res]
    of = np.array(_collective_kinds(c.names, collective_res), dtype=np.int64)[gpu.name]
    if options.analysis >= 2:
        kinds += [k for k in options.collective_ops if k not in kinds]
        of, left_out = _by_enclosing_op(c, options, kinds, gpu, links.corr, of)
        if left_out:
            notes.append(f"{len(left_out):,} NCCL/RCCL kernels ({int(gpu.dur[left_out].sum()) / 1e6:,.3f} ms) are "
                         f"not counted as collectives: neither their name nor a communication op enclosing their "
                         f"launch (nccl:*, c10d::*, vllm::*, record_param_comms) names a collective kind")
    return CollectiveOf(of=of, kinds=kinds), notes


def _by_enclosing_op(c: _Collected, options: TraceOptions, kinds: list[str], gpu: GpuEvents, corr: np.ndarray,
                     of: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Give NCCL/RCCL kernels that their name leaves unclassified the kind of the innermost communication op
    enclosing their launch on the launching thread; returns the kinds and the kernels still left out."""
    op_kinds = [kinds.index(k) for k, _ in options.ops_compiled()]
    nccl_names = np.array([bool(_NCCL_KERNEL.match(n)) for n in c.names], dtype=bool)
    todo = np.flatnonzero((of < 0) & gpu.is_kernel & nccl_names[gpu.name])
    if not len(todo):
        return of, []
    of = of.copy()
    per_thread = {t: sorted(v) for t, v in c.comm_ops.items()}
    starts = {t: [o.start for o in v] for t, v in per_thread.items()}
    longest = {t: max(o.end - o.start for o in v) for t, v in per_thread.items()}
    left = []
    for i in todo.tolist():
        launch = int(corr[i])
        ts, thread = c.launches.get(launch), c.launch_threads.get(launch)
        ops = per_thread.get(thread) if thread is not None else None
        kind = -1
        if ts is not None and thread is not None and ops:
            j = bisect_right(starts[thread], ts) - 1
            while j >= 0 and ops[j].start >= ts - longest[thread]:
                if ops[j].end >= ts:  # the latest-starting op still open at the launch: the innermost
                    kind = op_kinds[ops[j].kind]
                    break
                j -= 1
        if kind >= 0:
            of[i] = kind
        else:
            left.append(i)
    return of, left


def _collective_kinds(names: list[str], res: list[tuple[str, re.Pattern[str]]]) -> list[int]:
    """For each kernel name, the index of the first collective kind it matches, or -1."""
    out = []
    for name in names:
        out.append(next((i for i, (_, r) in enumerate(res) if r.search(name)), -1))
    return out


def collective_rows(c: _Collected, gpu: GpuEvents, steps: Steps,
                 coll: CollectiveOf) -> tuple[list[ProfileCollectiveRow], list[CollectiveKind]]:
    """Each selected step's collectives by kind and position (the n-th call of a kind in its step)."""
    rows: list[ProfileCollectiveRow] = []
    if steps.refused or not coll.kinds:
        return rows, []
    step_of = steps.step_of
    idx = np.flatnonzero(steps.in_selected & gpu.is_kernel & (coll.of >= 0))
    idx = idx[np.lexsort((gpu.stream[idx], gpu.ts[idx], step_of[idx]))]
    position: Counter[tuple[int, int]] = Counter()
    by_pos: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for i in idx.tolist():
        k, ck = int(step_of[i]), int(coll.of[i])
        p = position[(k, ck)]
        position[(k, ck)] += 1
        rows.append(ProfileCollectiveRow(
            step=k, kind=coll.kinds[ck], position=p, name=c.names[int(gpu.name[i])], start_ns=int(gpu.ts[i]),
            duration_us=us(int(gpu.dur[i])), stream=gpu.stream_labels[int(gpu.stream[i])]))
        by_pos.setdefault((ck, p), []).append((int(gpu.dur[i]), int(gpu.name[i])))
    rows.sort(key=lambda r: (r.step, r.kind, r.position))
    kinds = []
    for ck, kind in enumerate(coll.kinds):
        calls = np.array([position.get((int(k), ck), 0) for k in steps.selected_steps])
        if calls.any():
            kinds.append(CollectiveKind(kind=kind, calls=int(calls.sum()), calls_per_step=spread(calls),
                                        positions=[_position(c.names, p, by_pos[(ck, p)])
                                                   for p in range(int(calls.max()))]))
    kinds.sort(key=lambda k: k.kind)
    return rows, kinds


def _position(names: list[str], position: int, calls: list[tuple[int, int]]) -> CollectivePosition:
    """One position's calls (duration ns, name index) across the steps; named by its commonest kernel."""
    durs = np.array([d for d, _ in calls], dtype=np.int64)
    common = Counter(nm for _, nm in calls).most_common()
    top = min(nid for nid, n in common if n == common[0][1])
    return CollectivePosition(position=position, steps=len(calls), median_us=us(float(np.median(durs))),
                              min_us=us(int(durs.min())), max_us=us(int(durs.max())), name=names[top])

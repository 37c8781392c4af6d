"""CUDA-graph launches and the kernels each ran."""

from __future__ import annotations

import numpy as np

from audit.trace.analyze.arrays import (
    GpuEvents,
    Links,
    Steps,
    spread,
)
from audit.trace.collect import (
    _Collected,
)
from audit.trace.models import (
    CudaGraphs,
    ProfileStepRow,
)


def graph_figures(c: _Collected, links: Links, gpu: GpuEvents, steps: Steps, step_rows: list[ProfileStepRow],
                  ) -> tuple[CudaGraphs, list[str]]:
    """CUDA-graph launches and the kernels each ran (in the selected steps, else in the whole trace)."""
    corr = links.corr
    scope = steps.in_selected if not steps.refused else links.linked
    graph_ids = np.fromiter(c.graph_launches, dtype=np.int64, count=len(c.graph_launches))
    kernels = corr[scope & gpu.is_kernel]
    per_launch = np.unique(kernels[np.isin(kernels, graph_ids)], return_counts=True)[1]  # kernels per graph launch
    launched = corr[scope]
    ids, sizes = np.unique(launched[launched >= 0], return_counts=True)
    multi = int(((sizes > 1) & ~np.isin(ids, graph_ids)).sum())
    graphs, graph_kernels = len(per_launch), int(per_launch.sum())
    notes = []
    if graphs:
        notes.append(f"{graphs:,} CUDA-graph launches ran {graph_kernels:,} kernels "
                     f"(each kernel counted in the step of its graph's launch)")
    return CudaGraphs(
        graph_launches=graphs, kernels=graph_kernels, kernels_per_launch=spread(per_launch) if graphs else None,
        launches_per_step=spread(np.array([step_rows[k].graph_launches for k in steps.selected_steps]))
        if not steps.refused and graphs else None,
        multi_kernel_launches=multi), notes

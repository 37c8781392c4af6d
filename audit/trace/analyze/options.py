"""What shapes a summary: `TraceOptions`, the default collective tables, and the one mapping between the options
and the `config` a summary records (`to_config` / `from_config`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from audit.trace import DEFAULT_STEP_MARKER
from audit.trace.collect import (
    MARKER_CATEGORIES,
)
from audit.trace.models import (
    TraceConfig,
)
from audit.trace.reader import MAX_JSON_CHARS, TraceError

ANALYSIS_VERSION = 3
"""Version of the analysis a new summary records (`config.analysis`). 1: collectives by a substring of the
kernel name only; 2: by kernel family, then NCCL/RCCL kernels by the communication op enclosing their launch,
python_function markers, marker-span steps, refusals that say what the trace holds; 3: a space of at most
SPACING_NS between main-stream kernels is the profiler's spacing, not a gap (ROCm writes back-to-back kernels
1 ns apart), a device whose name is empty is shown by its id alone, SGLang's step annotations get a hint, and
--step-span marker says how its step count differs from HTA 0.5.0's. A package recomputes with the version and
options it records, so old packages keep reproducing."""

ANALYSIS_VERSIONS = (1, 2, ANALYSIS_VERSION)

SPACING_NS = 1
"""Idle stretches of the main stream at most this long are the profiler's spacing between back-to-back kernels
(ROCm's roctracer writes the next kernel's start 1 ns after the last one's end), not gaps (analysis 3)."""


_FAMILY = r"(?:^|[\s:&*])"
"""Start of a kernel's own identifier (after `void `, a namespace `::`, or nothing): a pattern anchored here
matches a kernel family, never a word inside a fused name such as Inductor's
`triton_poi_fused_add_all_reduce_...`."""


DEFAULT_COLLECTIVES: dict[str, tuple[str, ...]] = {
    # NCCL/RCCL (ncclDevKernel_AllReduce_Sum_bf16_RING_LL, older ncclKernel_AllReduce_...), vLLM's custom
    # all-reduce (vllm::cross_device_reduce_1stage/2stage), torch symmetric memory (one_shot_all_reduce,
    # two_shot_all_reduce, multimem_all_reduce), FlashInfer/TensorRT-LLM (allreduce_fusion_kernel...).
    "all_reduce": (_FAMILY + r"nccl(?:Dev)?Kernel_AllReduce", _FAMILY + r"cross_device_reduce_",
                   _FAMILY + r"(?:one_shot|two_shot|multimem)_all_reduce", _FAMILY + r"allreduce_fusion"),
    "all_gather": (_FAMILY + r"nccl(?:Dev)?Kernel_AllGather", _FAMILY + r"multimem_all_gather"),
    "reduce_scatter": (_FAMILY + r"nccl(?:Dev)?Kernel_ReduceScatter",
                       _FAMILY + r"(?:two_shot|multimem)_reduce_scatter"),
    "all_to_all": (_FAMILY + r"nccl(?:Dev)?Kernel_AllToAll",),
    "send_recv": (_FAMILY + r"nccl(?:Dev)?Kernel_(?:SendRecv|Send|Recv)",),
    "broadcast": (_FAMILY + r"nccl(?:Dev)?Kernel_Broadcast",),
}
"""Collective kinds and their kernel-family patterns (case-insensitive `re.search`, anchored at the start of
an identifier); extend with --collective."""


_OP = r"(?:nccl:|c10d::|vllm::|record_param_comms:)_?"


DEFAULT_COLLECTIVE_OPS: dict[str, tuple[str, ...]] = {
    "all_reduce": (_OP + r"all_?reduce(?:_coalesced)?_?",),
    "all_gather": (_OP + r"all_?gather(?:_base|_into_tensor(?:_coalesced)?|_coalesced)?_?",),
    "reduce_scatter": (_OP + r"reduce_?scatter(?:_base|_tensor(?:_coalesced)?)?_?",),
    "all_to_all": (_OP + r"all_?to_?all(?:_base|_single)?_?",),
    "send_recv": (_OP + r"(?:send|recv(?:_any_source)?|batch_isend_irecv)_?",),
    "broadcast": (_OP + r"broadcast_?",),
}
"""Communication ops (CPU `cpu_op`/`user_annotation` names, `re.fullmatch`, case-insensitive) and the kind of
the NCCL/RCCL kernels launched inside them: `nccl:all_reduce`, `c10d::allreduce_`, `vllm::all_reduce`, and
`record_param_comms` by its `Collective name` argument (read as `record_param_comms:NAME`). Only a kernel whose
name says NCCL/RCCL but no kind (`ncclDevKernel_Generic_2`) is classified so: a copy kernel that a
communication op launches is no collective."""


STEP_SPANS = ("next_marker", "marker")
"""`next_marker`: a step runs from its marker's start to the next marker's start (n markers, n − 1 steps);
`marker`: a step is its marker's own span, start to start + dur (one marker, one step). HTA 0.5.0 reads marker spans
so too, but drops the last ProfilerStep by default, so it reports one step fewer than `marker` does."""


EMBED_LIMIT_BYTES = 20_000_000
"""Trace files up to this size are copied into the package; larger ones are pinned by sha256 only."""


@dataclass(frozen=True)
class TraceOptions:
    """Everything that shapes a summary (recorded in `summary.json`'s `config`)."""

    step_marker: str = DEFAULT_STEP_MARKER
    step_filter: str | None = None
    collectives: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_COLLECTIVES))
    main_stream: str | None = None
    embed_limit_bytes: int = EMBED_LIMIT_BYTES
    marker_categories: tuple[str, ...] = MARKER_CATEGORIES
    collective_ops: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_COLLECTIVE_OPS))
    step_span: str = "next_marker"
    analysis: int = ANALYSIS_VERSION
    max_json_chars: int = MAX_JSON_CHARS

    def ops_compiled(self) -> list[tuple[str, re.Pattern[str]]]:
        """The communication-op patterns, one alternation per kind."""
        out = []
        for kind, pats in self.collective_ops.items():
            if pats:
                try:
                    out.append((kind, re.compile("|".join(f"(?:{p})" for p in pats), re.IGNORECASE)))
                except re.error as e:
                    raise TraceError(f"collective op pattern for {kind} is not a valid regular expression: {e}"
                                     ) from None
        return out

    def compiled(self) -> tuple[re.Pattern[str], re.Pattern[str] | None, list[tuple[str, re.Pattern[str]]]]:
        def comp(pattern: str, what: str, flags: int = 0) -> re.Pattern[str]:
            try:
                return re.compile(pattern, flags)
            except re.error as e:
                raise TraceError(f"{what} {pattern!r} is not a valid regular expression: {e}") from None

        if self.step_span not in STEP_SPANS:
            raise TraceError(f"--step-span {self.step_span!r}: expected one of {', '.join(STEP_SPANS)}")
        if self.analysis not in ANALYSIS_VERSIONS:
            raise TraceError(f"analysis version {self.analysis} is not one this audit runs "
                             f"({', '.join(map(str, ANALYSIS_VERSIONS))})")
        marker = comp(self.step_marker, "--step-marker")
        flt = comp(self.step_filter, "--step-filter") if self.step_filter is not None else None
        coll = [(kind, comp("|".join(f"(?:{p})" for p in pats), f"--collective {kind}=", re.IGNORECASE))
                for kind, pats in self.collectives.items() if pats]
        return marker, flt, coll

    def to_config(self) -> TraceConfig:
        """The options as the summary records them (`config`): every field but those in NOT_RECORDED; analysis 1
        wrote none of the fields after `embed_limit_bytes` (their defaults are its reading)."""
        values = {f.name: _recorded(getattr(self, f.name)) for f in fields(self)
                  if f.name not in NOT_RECORDED and (self.analysis >= 2 or f.name in _ANALYSIS_1_FIELDS)}
        return TraceConfig(**values)

    @classmethod
    def from_config(cls, config: TraceConfig) -> TraceOptions:
        """The options a recorded `config` was made with (what a recompute runs): every field but those in
        NOT_RECORDED, read back by name, so an option added here cannot be left out of a recompute (a field that
        TraceConfig lacks fails here, and tests/test_trace.py round-trips every field)."""
        return cls(**{f.name: _option(getattr(config, f.name)) for f in fields(cls) if f.name not in NOT_RECORDED})


NOT_RECORDED = ("max_json_chars",)
"""Options that bound the read (not what the figures are) and so are not in `config`: a recompute uses the
default bound."""

_ANALYSIS_1_FIELDS = ("step_marker", "step_filter", "marker_categories", "collectives", "main_stream",
                      "embed_limit_bytes")


def _recorded(value: Any) -> Any:
    """An option's value as JSON records it: tuples as lists (in dicts too)."""
    if isinstance(value, dict):
        return {k: list(v) if isinstance(v, tuple) else v for k, v in value.items()}
    return list(value) if isinstance(value, tuple) else value


def _option(value: Any) -> Any:
    """A recorded value as the option holds it: lists as tuples (in dicts too)."""
    if isinstance(value, dict):
        return {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
    return tuple(value) if isinstance(value, list) else value


def with_collectives(base: dict[str, tuple[str, ...]], specs: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Add `KIND=REGEX` patterns to the collective table (a new KIND is a new kind)."""
    out = {k: tuple(v) for k, v in base.items()}
    for spec in specs:
        kind, sep, pattern = spec.partition("=")
        kind = kind.strip()
        if not sep or not kind or not pattern or not re.fullmatch(r"[A-Za-z0-9_.-]+", kind):
            raise TraceError(f"--collective {spec!r}: expected KIND=REGEX, e.g. all_reduce=my_ar_kernel")
        try:
            re.compile(pattern)
        except re.error as e:
            raise TraceError(f"--collective {spec!r}: not a valid regular expression: {e}") from None
        out[kind] = out.get(kind, ()) + (pattern,)
    return out

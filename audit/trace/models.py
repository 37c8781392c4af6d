"""The summary of a `profile` package (`summary.json`) and of `audit trace diff`.

Rows of the package's data files (steps, kernels, collectives) are in `audit.models`.
Durations are in µs rounded to the nanosecond; absolute times are integer ns on the
trace's own clock (the profiler's `ts` × 1000), so nothing depends on float rounding.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from audit.models import Count, Int64, Record
from audit.schemas import register

TRACE_SUMMARY_SCHEMA_VERSION = 1
TRACE_DIFF_SCHEMA_VERSION = 1


class StepSpread(Record):
    """How a per-step count varies across the selected steps."""

    # Named `Spread` in the committed trace_summary.v1 schema ($defs key and title): pinned so.
    __qualname__ = "Spread"
    model_config = ConfigDict(title="Spread")

    median: float
    """Median over the steps."""
    min: int
    """Smallest value in one step."""
    max: int
    """Largest value in one step."""
    constant: bool
    """True when every selected step has the same value."""


class Durations(Record):
    """Distribution of durations, µs."""

    count: int = Field(ge=0)
    """How many durations."""
    median_us: float
    """Median."""
    min_us: float
    """Shortest."""
    max_us: float
    """Longest."""
    total_us: float
    """Sum."""


class TraceSource(Record):
    """The trace file summarised, pinned by hash."""

    file: str
    """The file's name (without its directory)."""
    sha256: str
    """sha256 of the file's bytes as read (compressed bytes for a .gz file)."""
    bytes: int = Field(ge=0)
    """Size of the file."""
    gzip: bool
    """True when the file is gzip-compressed."""
    json_chars: int = Field(ge=0)
    """Characters of JSON text (the uncompressed size for ASCII traces)."""
    included: str | None
    """Path of the raw trace's copy inside the package; null when the file was over the size limit."""


class TraceConfig(Record):
    """Every option that shaped the summary."""

    step_marker: str
    """Regular expression (Python `re.search`) a CPU annotation's name matches to mark a step's start."""
    step_filter: str | None
    """Regular expression a step's marker name must match for the step to count (null: every step)."""
    marker_categories: list[str]
    """Event categories that may hold step markers."""
    collectives: dict[str, list[str]]
    """Collective kinds and the regular expressions (case-insensitive `re.search`) of their kernel names."""
    main_stream: str | None
    """Stream given with `--main-stream`; null to pick the stream that ran the most kernels."""
    embed_limit_bytes: int
    """Largest trace file copied into the package."""
    analysis: int = 1
    """Version of the analysis (`audit.trace.analyze.ANALYSIS_VERSION`); 1 when absent (packages written before
    it was recorded): collectives by kernel-name substring only."""
    step_span: Literal["next_marker", "marker"] = "next_marker"
    """`next_marker`: a step runs from its marker's start to the next marker's start (n markers bound n − 1
    steps); `marker`: a step is its marker's own span (one marker is one step; HTA 0.5.0, which reads spans too,
    drops the last ProfilerStep by default and so counts one fewer)."""
    collective_ops: dict[str, list[str]] = {}
    """Communication ops (`re.fullmatch`, case-insensitive, on CPU op names; `record_param_comms:NAME` for
    record_param_comms) whose enclosed NCCL/RCCL kernels take their kind when the kernel name names none."""


class TraceInfo(Record):
    """What the trace file holds."""

    kineto_schema_version: int | None
    """The trace's own `schemaVersion`."""
    rank: int | None
    """`distributedInfo.rank`, when present."""
    world_size: int | None
    """`distributedInfo.world_size`, when present."""
    devices: list[str]
    """GPUs that ran the trace's GPU activity: `ID: NAME` (name from `deviceProperties`)."""
    events: int = Field(ge=0)
    """Events in `traceEvents`."""
    events_by_category: dict[str, int]
    """Events by `cat` (`(none)` for events without one), sorted by name."""
    kernels: int = Field(ge=0)
    """GPU kernels in the whole trace."""
    memcpy: int = Field(ge=0)
    """GPU memory copies in the whole trace."""
    memset: int = Field(ge=0)
    """GPU memsets in the whole trace."""
    kernel_us: float
    """Summed kernel duration over the whole trace, µs."""
    kernel_names: int = Field(ge=0)
    """Distinct kernel names."""


class Linking(Record):
    """How GPU activity was matched to the CPU event that launched it."""

    launch_events: int = Field(ge=0)
    """CPU runtime/driver events with a correlation id (`cudaLaunchKernel`, `cuLaunchKernel`,
    `cudaGraphLaunch`, ...)."""
    gpu_events: int = Field(ge=0)
    """GPU kernels, memcpys and memsets."""
    by_correlation: int = Field(ge=0)
    """Matched through `args.correlation`."""
    by_flow: int = Field(ge=0)
    """Without `args.correlation`, matched through the `ac2g` flow event that ends on them."""
    unlinked: int = Field(ge=0)
    """No launching event in the trace (launched before profiling started, or a sampled trace): counted in
    whole-trace totals only, never placed in a step by timestamp."""
    flow_disagreements: int = Field(ge=0)
    """GPU events whose `ac2g` flow names a different correlation id than `args.correlation` (the latter is used)."""


class Markers(Record):
    """The step markers found, and the steps they bound."""

    found: int = Field(ge=0)
    """Events whose name matched `step_marker`."""
    first: str | None
    """Name of the first marker."""
    last: str | None
    """Name of the last marker."""
    thread: str | None
    """`PID/TID` of the thread the markers are on."""
    complete_steps: int = Field(ge=0)
    """Steps with a marker at each end (markers − 1); with `step_span` `marker`, one per marker."""
    selected_steps: int = Field(ge=0)
    """Complete steps that `step_filter` keeps."""
    gpu_events_before_first: int = Field(ge=0)
    """GPU events launched before the first marker (in no step)."""
    gpu_events_after_last: int = Field(ge=0)
    """GPU events launched after the last marker: its step has no end, so it is not counted."""
    refused: str | None
    """Why there are no per-step figures; null when there are."""


class StepFigures(Record):
    """Figures over the selected complete steps."""

    steps: int = Field(ge=1)
    """Selected complete steps."""
    kernels_per_step: StepSpread
    """Kernels launched per step, all streams."""
    kernels_per_step_by_stream: dict[str, StepSpread]
    """Kernels launched per step, by stream (a step without kernels on a stream counts 0)."""
    memcpy_per_step: StepSpread
    """Memory copies per step."""
    memset_per_step: StepSpread
    """Memsets per step."""
    step_us: Durations
    """Step durations: marker start to the next marker's start (CPU clock)."""
    gpu_window_us: Durations
    """GPU windows of the steps (see `ProfileStepRow.gpu_window_us`), for steps with GPU activity."""
    kernel_us: Durations
    """Durations of the kernels launched in the steps."""


class Gap(Record):
    """One idle interval of the main stream."""

    start_ns: int
    """When the stream went idle, ns on the trace clock."""
    duration_us: float
    """How long it stayed idle, µs."""
    step: int | None
    """Step whose GPU window holds the gap."""
    before: str | None
    """Kernel that ran last before the gap (null at the window's start)."""
    after: str | None
    """Kernel that ran first after it (null at the window's end)."""


class MainStream(Record):
    """Busy time and idle gaps of the main stream."""

    stream: str
    """The stream: given with `--main-stream`, or the one that ran the most kernels (then most kernel time)."""
    chosen: Literal["most kernels", "given"]
    """How the stream was chosen."""
    window: Literal["steps", "trace"]
    """`steps`: the selected steps' GPU windows; `trace`: first to last GPU activity (no steps)."""
    window_us: float
    """Total length of the window, µs."""
    busy_us: float
    """Time the stream executed kernels, copies or memsets inside the window, µs."""
    busy_fraction: float
    """busy_us / window_us."""
    gaps: int = Field(ge=0)
    """Idle intervals inside the window (a gap that spans two steps' windows counts in each)."""
    idle_us: float
    """Their summed length, µs (window_us − busy_us)."""
    gap_median_us: float | None
    """Median idle interval, µs."""
    gap_max_us: float | None
    """Longest idle interval, µs."""
    gap_histogram: dict[str, int]
    """Idle intervals by length: `<1us`, `1-10us`, `10-100us`, `100us-1ms`, `>=1ms`."""
    largest_gaps: list[Gap]
    """The longest idle intervals, longest first."""


class CudaGraphs(Record):
    """CUDA-graph replays: one launch, many kernels sharing its correlation id."""

    graph_launches: int = Field(ge=0)
    """Graph launches in the selected steps (whole trace when there are none)."""
    kernels: int = Field(ge=0)
    """Kernels those launches ran."""
    kernels_per_launch: StepSpread | None
    """Kernels per graph launch; null without graph launches."""
    launches_per_step: StepSpread | None
    """Graph launches per selected step; null without steps."""
    multi_kernel_launches: int = Field(ge=0)
    """Other launch events with more than one GPU activity on their correlation id."""


class CollectivePosition(Record):
    """The calls at one position of a step, across the selected steps."""

    position: int = Field(ge=0)
    """Index within the step (0 = the step's first call of this kind), by GPU start time."""
    steps: int = Field(ge=0)
    """Selected steps that have a call at this position."""
    median_us: float
    """Median duration of those calls, µs."""
    min_us: float
    """Shortest, µs."""
    max_us: float
    """Longest, µs."""
    name: str
    """The kernel name seen most often at this position."""


class CollectiveKind(Record):
    """One collective kind (e.g. `all_reduce`) per position within the step."""

    kind: str
    """The kind."""
    calls: int = Field(ge=0)
    """Calls in the selected steps."""
    calls_per_step: StepSpread
    """Calls per selected step."""
    positions: list[CollectivePosition]
    """One entry per position, in order."""


class TraceSummary(Record):
    """`summary.json` of a `profile` package: where a step's time goes, derived from one profiler trace."""

    schema_version: int = TRACE_SUMMARY_SCHEMA_VERSION
    """Version of this format; readers refuse newer versions."""
    kind: Literal["trace_summary"] = "trace_summary"
    """Always `trace_summary`."""
    source: TraceSource
    """The trace file."""
    config: TraceConfig
    """The options used."""
    trace: TraceInfo
    """What the trace holds, whole-trace totals."""
    linking: Linking
    """GPU activity matched to its launch."""
    markers: Markers
    """Step markers and steps."""
    steps: StepFigures | None
    """Per-step figures; null when refused (see `markers.refused`)."""
    main_stream: MainStream | None
    """Main-stream busy time and gaps; null without GPU activity."""
    cuda_graphs: CudaGraphs
    """CUDA-graph replays."""
    collectives: list[CollectiveKind]
    """Collectives per position within the step, by kind; empty without steps."""
    notes: list[str]
    """Things a reader must know to interpret the figures."""


class KernelChange(Record):
    """One kernel name compared across two traces."""

    name: str
    """Kernel name."""
    category: Literal["kernel", "memcpy", "memset"]
    """GPU activity type."""
    count_a: float
    """Occurrences in A (per step when `basis` is `per_step`)."""
    count_b: float
    """Occurrences in B (same basis)."""
    time_a_us: float
    """Summed duration in A, µs (same basis)."""
    time_b_us: float
    """Summed duration in B, µs (same basis)."""


class DiffSide(Record):
    """One side of a comparison."""

    label: str
    """The path given on the command line."""
    source_sha256: str
    """sha256 of the trace file (for a package: the trace it summarises)."""
    steps: int
    """Selected complete steps (0 when refused)."""


class TraceDiff(Record):
    """`audit trace diff A B --format json`: per-kernel-name count and time changes."""

    schema_version: int = TRACE_DIFF_SCHEMA_VERSION
    """Version of this format."""
    kind: Literal["trace_diff"] = "trace_diff"
    """Always `trace_diff`."""
    a: DiffSide
    """The first trace."""
    b: DiffSide
    """The second trace."""
    basis: Literal["per_step", "whole_trace"]
    """`per_step`: counts and times divided by each side's own step count (both have steps);
    `whole_trace`: totals."""
    count_changes: int = Field(ge=0)
    """Kernel names whose count differs."""
    rows: list[KernelChange]
    """Every kernel name of either side, largest time change first."""


register("trace_summary.v1", TraceSummary)
register("trace_diff.v1", TraceDiff)


# --------------------------------------------------------------------------- profile rows (audit trace)


class ProfileStepRow(Record):
    """One complete step of a profiler trace: a row of a `profile` package (see `audit.trace`)."""

    step: Count
    """Index of the step among the trace's complete steps (0 = the first marker's step)."""
    marker: str
    """Name of the step marker that opens the step, e.g. `ProfilerStep#12`."""
    start_ns: Int64
    """The marker's start on the trace's clock, in ns; the step ends where the next marker starts."""
    duration_us: float = Field(ge=0)
    """From this marker's start to the next one's, in µs (CPU time of the step)."""
    selected: bool
    """True when the step counts in the summary (it matches `--step-filter`, or no filter was given)."""
    kernels: Count
    """GPU kernels launched inside the step (matched to their launch through the correlation id)."""
    kernels_by_stream: dict[str, Count]
    """Those kernels by stream (`STREAM`, or `DEVICE:STREAM` when the trace spans several GPUs)."""
    memcpy: Count
    """GPU memory copies launched inside the step."""
    memset: Count
    """GPU memsets launched inside the step."""
    graph_launches: Count
    """CUDA-graph launches (`cudaGraphLaunch`) inside the step; their kernels count in `kernels`."""
    collectives: dict[str, Count]
    """Collective kernels of the step by kind (e.g. `all_reduce`)."""
    gpu_start_ns: Int64 | None = None
    """Start of the step's first GPU activity, in ns; null when nothing ran on the GPU for it."""
    gpu_window_us: float | None = None
    """GPU window of the step: from its first GPU activity to the next step's first (or its own last end), µs."""
    main_stream_busy_us: float | None = None
    """Time the main stream executed work inside the GPU window, in µs."""


class ProfileKernelRow(Record):
    """One GPU kernel (or memcpy/memset) name of a profiler trace: a row of a `profile` package."""

    name: str
    """The kernel's name as the trace gives it."""
    category: Literal["kernel", "memcpy", "memset"]
    """GPU activity type."""
    collective: str | None = None
    """Collective kind the name matched (e.g. `all_reduce`), or null."""
    count: Count
    """Occurrences launched inside the selected complete steps."""
    total_us: float = Field(ge=0)
    """Their summed duration, µs."""
    median_us: float | None = None
    """Their median duration, µs; null when `count` is 0."""
    min_us: float | None = None
    """Their shortest duration, µs."""
    max_us: float | None = None
    """Their longest duration, µs."""
    per_step_min: Int64 | None = None
    """Fewest occurrences in one selected step; null without steps."""
    per_step_max: Int64 | None = None
    """Most occurrences in one selected step; null without steps."""
    count_all: Count
    """Occurrences in the whole trace, inside steps or not."""
    total_us_all: float = Field(ge=0)
    """Summed duration over the whole trace, µs."""
    streams: list[str]
    """Streams it ran on, in the notation of `ProfileStepRow.kernels_by_stream`."""


class ProfileCollectiveRow(Record):
    """One collective kernel inside a selected step, with its position: a row of a `profile` package."""

    step: Count
    """The step (`ProfileStepRow.step`)."""
    kind: str
    """Collective kind, e.g. `all_reduce`."""
    position: Count
    """Index of this call among the step's collectives of the same kind, in GPU start order (0 = first)."""
    name: str
    """The kernel's name."""
    start_ns: Int64
    """GPU start on the trace's clock, ns."""
    duration_us: float = Field(ge=0)
    """GPU duration, µs."""
    stream: str
    """Stream it ran on."""

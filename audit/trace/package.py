"""`profile` packages: a trace's summary and rows, written atomically, read back validated.

Layout (every file pinned by sha256 in `manifest.json`):
- `summary.json`: the `TraceSummary` (schema `trace_summary.v1`);
- `steps.jsonl`, `kernels.jsonl`, `collectives.jsonl`: rows `profile_step.v1`, `profile_kernel.v1`,
  `profile_collective.v1`;
- `trace/FILE`: the raw trace, byte for byte, when it is at most `embed_limit_bytes`; otherwise
  `summary.source` pins it by sha256 and size;
- `provenance.extra.trace` (`ProfileExtra`): the trace's file name, sha256, size, rank and world size.

`read_checked` reads a package back and recomputes its figures from the trace it holds (or cross-checks
the summary against its steps when it only pins the trace): the `profile` kind's reader, what
`audit show` and the `trace.*` claim recipes run.

Nothing in the content depends on the time or the machine (the manifest's `created` and
`producer` are outside the content digest), so the same trace and options give the same
content digest.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from audit.errors import AuditError
from audit.fileio import json_differences, sha256_file
from audit.models import Manifest, Provenance, Subject
from audit.outputs import check_output
from audit.packages import Package, PackageWriter, open_package
from audit.packages.kinds import Extra, Kind, register_kind
from audit.trace.analyze import TraceOptions, TraceResult, analyze
from audit.trace.models import (
    TRACE_SUMMARY_SCHEMA_VERSION,
    ProfileCollectiveRow,
    ProfileKernelRow,
    ProfileStepRow,
    TraceSummary,
)

SUMMARY = "summary.json"
STEPS = "steps.jsonl"
KERNELS = "kernels.jsonl"
COLLECTIVES = "collectives.jsonl"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")


def _trace_member(name: str, gz: bool) -> str:
    if _SAFE_NAME.match(name):
        return f"trace/{name}"
    return "trace/trace.json.gz" if gz else "trace/trace.json"


def _hardware(summary: TraceSummary) -> str | None:
    devices = summary.trace.devices
    names = {d.split(": ", 1)[1] for d in devices if ": " in d}
    if len(names) == 1:
        return f"{len(devices)}x {names.pop()}"
    return None


def write_profile(result: TraceResult, trace_path: str | Path, out: str | Path, *, force: bool = False,
                  subject: Subject | None = None) -> tuple[Manifest, TraceSummary]:
    """Write the package for an analysed trace; returns its manifest and the summary as stored.
    `subject` names what was measured (model, engine, hardware, weights, run: `audit.subject`)."""
    summary = result.summary
    src = summary.source
    included = None
    if src.bytes <= summary.config.embed_limit_bytes:
        included = _trace_member(src.file, src.gzip)
    summary = summary.model_copy(update={"source": src.model_copy(update={"included": included})})
    dist = {k: v for k, v in (("rank", summary.trace.rank), ("world_size", summary.trace.world_size))
            if v is not None}
    provenance = Provenance(
        model=subject.model if subject else None, engine="pytorch-profiler",
        hardware=subject.hardware if subject else _hardware(summary), source=f"{src.file} sha256:{src.sha256}",
        extra={"trace": {"file": src.file, "sha256": src.sha256, "bytes": src.bytes, **dist}}, subject=subject)
    with PackageWriter(out, kind=PROFILE.name, provenance=provenance, overwrite=force) as w:
        if included is not None:
            w.add_file(included, trace_path)
            digest, size = sha256_file(w.path(included))
            if digest != src.sha256 or size != src.bytes:
                raise AuditError("the file changed while it was read: run again", path=str(trace_path))
        w.add_document(SUMMARY, "trace_summary.v1", summary)
        with w.rows(STEPS, "profile_step.v1") as sink:
            for step in result.steps:
                sink.write(step)
        with w.rows(KERNELS, "profile_kernel.v1") as sink:
            for kernel in result.kernels:
                sink.write(kernel)
        with w.rows(COLLECTIVES, "profile_collective.v1") as sink:
            for collective in result.collectives:
                sink.write(collective)
    assert w.manifest is not None
    return w.manifest, summary


def summarize_to_package(trace_path: str | Path, out: str | Path, options: TraceOptions | None = None, *,
                         force: bool = False, subject: Callable[[str | None], Subject | None] | None = None
                         ) -> tuple[Manifest, TraceSummary]:
    """Analyse a trace file and write its `profile` package. Nothing is written on bad input.
    `subject(hardware the trace names)` gives the package's subject, or raises to refuse it."""
    out = Path(out)
    check_output(out, force=force)  # refuse before reading a large trace
    result = analyze(trace_path, options)
    named = subject(_hardware(result.summary)) if subject is not None else None
    return write_profile(result, trace_path, out, force=force, subject=named)


@dataclass
class LoadedProfile:
    """A profile package's summary and kernel rows."""

    summary: TraceSummary
    kernels: list[ProfileKernelRow]
    steps: list[ProfileStepRow]
    digest: str


def open_profile(path: str | Path) -> LoadedProfile:
    """Read a validated `profile` package, its figures checked as the kind reads it (`read_checked`: recomputed
    from the trace it holds, else cross-checked against its steps)."""
    with open_package(path, kind=PROFILE.name) as pkg:
        return read_checked(pkg, str(path)).loaded


def read_profile(pkg: Package, label: str) -> LoadedProfile:
    """`open_profile` of a profile package already open (and validated), named `label` in errors."""
    summary = pkg.document("trace_summary.v1")
    if summary.schema_version > TRACE_SUMMARY_SCHEMA_VERSION:
        raise AuditError(f"summary schema_version {summary.schema_version} is newer than this audit reads",
                         path=label)
    kernels = list(pkg.iter_rows("profile_kernel.v1"))
    steps = list(pkg.iter_rows("profile_step.v1"))
    return LoadedProfile(summary, kernels, steps, pkg.digest)


# --------------------------------------------------------------------------- the profile kind


class TraceRecord(Extra):
    """The trace a profile package was made from (`provenance.extra.trace`)."""

    file: str
    """The trace's file name."""
    sha256: str
    """sha256 of the trace's bytes."""
    bytes: int
    """The trace's size."""
    rank: int | None = None
    """The trace's rank, when it names one."""
    world_size: int | None = None
    """The run's world size, when the trace names it."""


class ProfileExtra(Extra):
    """`provenance.extra` of a profile package (`write_profile`)."""

    trace: TraceRecord


@dataclass
class CheckedProfile:
    """A profile package read back with its figures checked: how they were."""

    loaded: LoadedProfile
    how: str
    """How the figures were checked, in words: recomputed from the trace, or cross-checked against the steps."""


def read_checked(pkg: Package, label: str) -> CheckedProfile:
    """`read_profile`, then the figures checked: recomputed from the trace when the package holds it (with the
    options the summary records; the summary, steps and kernels must be what that gives), else the summary's
    kernels per step cross-checked against steps.jsonl. AuditError naming `label` on any difference."""
    PROFILE.extra_of(pkg.manifest, label)
    loaded = read_profile(pkg, label)
    s = loaded.summary
    if s.source.included is not None:
        fresh = analyze(pkg.root / s.source.included, TraceOptions.from_config(s.config))
        again = fresh.summary.model_copy(update={"source": fresh.summary.source.model_copy(
            update={"included": s.source.included, "file": s.source.file})})
        diffs = json_differences(s.model_dump(mode="json"), again.model_dump(mode="json"))
        if fresh.steps != loaded.steps:
            diffs.append("steps.jsonl: differs from the steps recomputed from the trace")
        if fresh.kernels != loaded.kernels:
            diffs.append("kernels.jsonl: differs from the kernels recomputed from the trace")
        if diffs:
            more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
            raise AuditError(f"summary.json differs from the figures recomputed from its trace "
                             f"{s.source.included}: {diffs[0]}{more}", path=label)
        how = f"recomputed from the trace in the package ({s.source.file}, sha256 {s.source.sha256[:12]}…)"
    else:
        _cross_check(label, loaded)
        how = (f"from summary.json, cross-checked against steps.jsonl (the trace {s.source.file}, sha256 "
               f"{s.source.sha256[:12]}…, is not in the package)")
    return CheckedProfile(loaded, how)


def _cross_check(label: str, loaded: LoadedProfile) -> None:
    s = loaded.summary
    if s.steps is None:
        return
    kernels = [r.kernels for r in loaded.steps if r.selected]
    k = s.steps.kernels_per_step
    if (len(kernels), min(kernels, default=None), max(kernels, default=None)) != (s.steps.steps, k.min, k.max) or \
            statistics.median(kernels) != k.median:
        raise AuditError(f"summary.json's kernels per step ({k.median:g}, {k.min}–{k.max} over "
                         f"{s.steps.steps} steps) disagree with steps.jsonl", path=label)


SHOWN = ("steps", "kernels", "step time", "main stream", "cuda graphs", "note")
"""The lines of the trace report `audit show` prints."""


def _show(checked: CheckedProfile) -> list[str]:
    from audit.trace.report import render_summary

    text = render_summary(checked.loaded.summary)
    return [line for line in text.splitlines() if line.startswith(SHOWN)]


PROFILE = register_kind(Kind(
    "profile", "a profiler trace's summary, steps, kernels and collectives (`audit trace`)",
    rows={"profile_step.v1": ProfileStepRow, "profile_kernel.v1": ProfileKernelRow,
          "profile_collective.v1": ProfileCollectiveRow},
    row_keys={"profile_step.v1": ("step",), "profile_kernel.v1": ("name", "category"),
              "profile_collective.v1": ("step", "kind", "position")},
    documents={"trace_summary.v1": TraceSummary}, extra=ProfileExtra,
    reader=read_checked, viewer=_show), __name__)

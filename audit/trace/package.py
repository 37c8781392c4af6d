"""`profile` packages: a trace's summary and rows, written atomically, read back validated.

Layout (every file pinned by sha256 in `manifest.json`):
- `summary.json`: the `TraceSummary` (schema `trace_summary.v1`);
- `steps.jsonl`, `kernels.jsonl`, `collectives.jsonl`: rows `profile_step.v1`, `profile_kernel.v1`,
  `profile_collective.v1`;
- `trace/FILE`: the raw trace, byte for byte, when it is at most `embed_limit_bytes`; otherwise
  `summary.source` pins it by sha256 and size.

Nothing in the content depends on the time or the machine (the manifest's `created` and
`producer` are outside the content digest), so the same trace and options give the same
content digest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from audit.errors import AuditError
from audit.fileio import sha256_file
from audit.models import Manifest, ProfileKernelRow, ProfileStepRow, Provenance
from audit.outputs import check_output
from audit.packages import Package, PackageWriter, open_package
from audit.trace.analyze import TraceOptions, TraceResult, analyze
from audit.trace.models import TRACE_SUMMARY_SCHEMA_VERSION, TraceSummary

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


def write_profile(result: TraceResult, trace_path: str | Path, out: str | Path, *, force: bool = False
                  ) -> tuple[Manifest, TraceSummary]:
    """Write the package for an analysed trace; returns its manifest and the summary as stored."""
    summary = result.summary
    src = summary.source
    included = None
    if src.bytes <= summary.config.embed_limit_bytes:
        included = _trace_member(src.file, src.gzip)
    summary = summary.model_copy(update={"source": src.model_copy(update={"included": included})})
    dist = {k: v for k, v in (("rank", summary.trace.rank), ("world_size", summary.trace.world_size))
            if v is not None}
    provenance = Provenance(
        engine="pytorch-profiler", hardware=_hardware(summary), source=f"{src.file} sha256:{src.sha256}",
        extra={"trace": {"file": src.file, "sha256": src.sha256, "bytes": src.bytes, **dist}})
    with PackageWriter(out, kind="profile", provenance=provenance, overwrite=force) as w:
        if included is not None:
            w.add_file(included, trace_path)
            digest, size = sha256_file(w.path(included))
            if digest != src.sha256 or size != src.bytes:
                raise AuditError("the file changed while it was read: run again", path=str(trace_path))
        w.add_document(SUMMARY, "trace_summary.v1", summary)
        with w.rows(STEPS, "profile_step.v1") as sink:
            for row in result.steps:
                sink.write(row)
        with w.rows(KERNELS, "profile_kernel.v1") as sink:
            for row in result.kernels:
                sink.write(row)
        with w.rows(COLLECTIVES, "profile_collective.v1") as sink:
            for row in result.collectives:
                sink.write(row)
    assert w.manifest is not None
    return w.manifest, summary


def summarize_to_package(trace_path: str | Path, out: str | Path, options: TraceOptions | None = None, *,
                         force: bool = False) -> tuple[Manifest, TraceSummary]:
    """Analyse a trace file and write its `profile` package. Nothing is written on bad input."""
    out = Path(out)
    check_output(out, force=force)  # refuse before reading a large trace
    result = analyze(trace_path, options)
    return write_profile(result, trace_path, out, force=force)


@dataclass
class LoadedProfile:
    """A profile package's summary and kernel rows."""

    summary: TraceSummary
    kernels: list[ProfileKernelRow]
    steps: list[ProfileStepRow]
    digest: str


def load_profile(path: str | Path) -> LoadedProfile:
    """Read a validated `profile` package."""
    with open_package(path, kind="profile") as pkg:
        return read_profile(pkg, str(path))


def read_profile(pkg: Package, label: str) -> LoadedProfile:
    """`load_profile` of a profile package already open (and validated), named `label` in errors."""
    summary = pkg.document("trace_summary.v1")
    if summary.schema_version > TRACE_SUMMARY_SCHEMA_VERSION:
        raise AuditError(f"summary schema_version {summary.schema_version} is newer than this audit reads",
                         path=label)
    kernels = list(pkg.iter_rows("profile_kernel.v1"))
    steps = list(pkg.iter_rows("profile_step.v1"))
    return LoadedProfile(summary, kernels, steps, pkg.digest)

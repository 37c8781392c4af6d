"""The packages of a throughput run: writing them, reading them back, recomputing their figures.

`throughput` package: `requests.jsonl` (`bench_request_row.v1`), `windows.jsonl`
(`bench_window_row.v1`), `summary.json` (`ThroughputSummary`), and when there were any, the
launched server's `server.log` (at most `KEPT_LOG_BYTES` of it) and the anchor's `anchor.json` /
`anchor.log`. The manifest's `provenance.extra` holds the run's full configuration.

`telemetry` package: `gpu_samples.parquet` (`gpu_sample_row.v1`), `gpm_samples.parquet`
(`gpm_sample_row.v1`) and `summary.json` (`TelemetrySummary`); `provenance.extra.throughput`
names the throughput package by id and content digest, and `extra.windows` repeats its window
edges so the telemetry figures can be recomputed from the telemetry package alone; the summary
holds both too, so the link is part of the telemetry package's content (and its digest).

A reader never takes a stored summary on trust: `read_*` recompute it from the rows and report
every field that differs. Both kinds are registered at the end of this module (`THROUGHPUT`,
`TELEMETRY`), with typed models of what their `provenance.extra` holds (`ThroughputExtra`,
`TelemetryExtra`), checked on read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

from pydantic import Field

from audit.bench import figures, telemetry
from audit.bench.rows import BenchRequestRow, BenchWindowRow, GpmSampleRow, GpuSampleRow
from audit.bench.throughput import RunResult, hardware_of
from audit.errors import AuditError, Problem, ValidationFailed
from audit.fileio import JsonError, document_bytes, dumps_pretty, json_differences, loads_strict
from audit.generate.vllm_server import kept_log
from audit.models import Manifest, Provenance, Subject
from audit.outputs import check_output
from audit.packages import Package, PackageWriter, open_package, package_digest
from audit.packages.kinds import Extra, Kind, Link, register_kind

REQUESTS = "requests.jsonl"
WINDOWS = "windows.jsonl"
SUMMARY = "summary.json"
ANCHOR = "anchor.json"
GPU_SAMPLES = "gpu_samples.parquet"
GPM_SAMPLES = "gpm_samples.parquet"
ANCHOR_TOOL = "vllm bench serve"



def telemetry_path(out: str | Path) -> Path:
    """Where the telemetry package of throughput package `out` goes by default: `OUT.telemetry`."""
    p = Path(out)
    for suffix in (".tar.gz", ".tgz"):
        if p.name.endswith(suffix):
            return p.with_name(p.name[: -len(suffix)] + ".telemetry" + suffix)
    return p.with_name(p.name + ".telemetry")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-.") or "arm"


def _summary_text(model: Any) -> str:
    return dumps_pretty(model.model_dump(mode="json"))


def check_outputs(out: Path, tel_out: Path | None, force: bool) -> None:
    """Refuse before measuring, not after: outputs that exist (without --force) or have no parent."""
    for p in (out, tel_out):
        if p is None:
            continue
        check_output(p, force=force)


def write(result: RunResult, out: Path, tel_out: Path | None, *, force: bool = False,
          subject: Subject | None = None) -> tuple[Manifest, Manifest | None]:
    """Write the throughput package, then the telemetry package linked to it; both record `subject`
    (what was measured: `audit.subject`) when given."""
    cfg = result.config
    anchor = None
    anchor_bytes = None
    if result.anchor_result is not None:
        # Read once: the summary's anchor figures and the stored anchor.json are the same bytes.
        anchor_bytes = document_bytes(result.anchor_result)
        anchor = (ANCHOR_TOOL, _read_anchor(anchor_bytes, str(result.anchor_result)))
    summary = figures.summarize(cfg.arm, result.rows, result.windows, cfg.stall_s, anchor)
    tel = result.telemetry
    extra: dict[str, Any] = {
        "arm": cfg.arm,
        "run": run_settings(result),
        "config": cfg.record(),
        "prompt": result.prompt,
        "servers": result.servers,
        "notes": result.notes,
        "telemetry": ({"package": tel_out.name, "status": tel.status} if tel is not None and tel_out is not None
                      else "off"),
    }
    if result.anchor is not None:
        extra["anchor"] = result.anchor
    versions = {s.get("version") for s in result.servers}
    prov = Provenance(model=subject.model if subject else result.model, engine="vllm" if any(versions) else None,
                      engine_version=next(iter(versions)) if len(versions) == 1 else None,
                      hardware=subject.hardware if subject else hardware_of(result), subject=subject,
                      sampling={"temperature": 0.0, "max_tokens": cfg.max_tokens, "ignore_eos": cfg.ignore_eos, "n": 1},
                      notes="Decode throughput: streamed requests timed per token; figures in summary.json are "
                            "recomputed from requests.jsonl and windows.jsonl by `audit bench report`.",
                      extra=extra)
    with PackageWriter(out, kind=THROUGHPUT.name, provenance=prov, package_id=cfg.package_id,
                       id_prefix=f"throughput-{_slug(cfg.arm)}", overwrite=force) as w:
        with w.rows(REQUESTS, "bench_request_row.v1") as sink:
            for r in result.rows:
                sink.write(r)
        with w.rows(WINDOWS, "bench_window_row.v1") as sink:
            for wr in result.windows:
                sink.write(wr)
        w.add_text(SUMMARY, _summary_text(summary))
        if result.work is not None and (result.work / "server.log").is_file():
            w.add_bytes("server.log", kept_log(result.work / "server.log"))
        if anchor_bytes is not None:
            w.add_bytes(ANCHOR, anchor_bytes)
        if result.anchor_log is not None and result.anchor_log.is_file():
            w.add_file("anchor.log", result.anchor_log)
    assert w.manifest is not None
    tp = w.manifest
    tm = None
    if tel is not None and tel_out is not None:
        tm = write_telemetry(tel, tel_out, tp, result, force=force, subject=subject)
    return tp, tm


def run_settings(result: RunResult) -> dict[str, Any]:
    """The settings two arms must share to be compared."""
    cfg = result.config
    return {"model": result.model, "prompt_tokens": cfg.prompt_tokens, "max_tokens": cfg.max_tokens,
            "ignore_eos": cfg.ignore_eos, "concurrency": cfg.concurrency, "servers": len(result.servers),
            "windows": cfg.windows, "window_s": cfg.window_s, "stall_s": cfg.stall_s,
            "warmup_requests": cfg.warmup_requests}


def write_telemetry(tel: telemetry.SamplerResult, out: Path, throughput: Manifest, result: RunResult, *,
                    force: bool = False, subject: Subject | None = None) -> Manifest:
    gpu_rows = [GpuSampleRow(**r) for r in tel.gpu_rows]
    gpm_rows = [GpmSampleRow(**r) for r in tel.gpm_rows]
    windows = [(w.window, w.start, w.end) for w in result.windows]
    link = (throughput.package_id, package_digest(throughput))
    summary = telemetry.summarize(link, tel.status, len(tel.devices), windows, gpu_rows, gpm_rows)
    extra = {
        "throughput": {"package_id": link[0], "digest": link[1]},
        "status": tel.status,
        "devices": [{"index": d.index, "name": d.name, "uuid": d.uuid} for d in tel.devices],
        "counters": tel.counters,
        "events": tel.events,
        "windows": [list(w) for w in windows],
        "sampler": {"hz": tel.hz, "gpm_interval_s": tel.gpm_interval_s, "cpu_s": round(tel.cpu_s, 4),
                    "wall_s": round(tel.wall_s, 3),
                    "cpu_fraction_of_one_core": round(tel.cpu_s / tel.wall_s, 6) if tel.wall_s > 0 else None,
                    "late_ticks": tel.late_ticks, **tel.info},
    }
    prov = Provenance(model=subject.model if subject else None,
                      hardware=subject.hardware if subject else hardware_of(result), subject=subject,
                      notes="GPU counters sampled during the linked throughput run "
                      "(NVML; GPM on Hopper and newer). Null values are counters not read, never zeros.", extra=extra)
    with PackageWriter(out, kind=TELEMETRY.name, provenance=prov, id_prefix=f"telemetry-{_slug(result.config.arm)}",
                       overwrite=force) as w:
        with w.rows(GPU_SAMPLES, "gpu_sample_row.v1") as sink:
            for r in sorted(gpu_rows, key=lambda r: (r.t, r.gpu)):
                sink.write(r)
        with w.rows(GPM_SAMPLES, "gpm_sample_row.v1") as sink:
            for gpm in sorted(gpm_rows, key=lambda r: (r.t_start, r.gpu)):
                sink.write(gpm)
        w.add_text(SUMMARY, _summary_text(summary))
    assert w.manifest is not None
    return w.manifest


# --------------------------------------------------------------------------- reading


def _read_anchor(data: bytes, where: str) -> dict[str, Any]:
    try:
        obj = loads_strict(data)  # a key given twice is refused, not read as its last value
    except JsonError as e:
        raise AuditError(f"not JSON: {e}", path=where, field=e.field) from None
    if not isinstance(obj, dict):
        raise AuditError("not a JSON object", path=where)
    return obj


def _stored_summary(pkg: Package) -> dict[str, Any]:
    """summary.json from the bytes the manifest pins (Package.read_json), decoded strictly."""
    obj = pkg.read_json(SUMMARY)
    if not isinstance(obj, dict):
        raise AuditError("not a JSON object", path=f"{pkg.source}/{SUMMARY}")
    return obj


_Summary = TypeVar("_Summary")


@dataclass
class _ReadBack(Generic[_Summary]):
    """A package read back: its stored summary and the one recomputed from its rows. Open until `close`
    (or the end of a `with` block)."""

    pkg: Package
    stored: dict[str, Any]
    summary: _Summary

    @property
    def extra(self) -> dict[str, Any]:
        return self.pkg.manifest.provenance.extra

    def close(self) -> None:
        self.pkg.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Throughput(_ReadBack[figures.ThroughputSummary]):
    """A throughput package read back, with its request and window rows."""

    requests: list[BenchRequestRow]
    windows: list[BenchWindowRow]


@dataclass
class Telemetry(_ReadBack[telemetry.TelemetrySummary]):
    """A telemetry package read back, with its GPU and GPM samples."""

    gpu_rows: list[GpuSampleRow]
    gpm_rows: list[GpmSampleRow]


def _check(src: str, stored: dict[str, Any], fresh: Any) -> None:
    diffs = json_differences(stored, fresh.model_dump(mode="json"))
    if diffs:
        raise ValidationFailed(src, [Problem(f"{src}/{SUMMARY}", f"differs from the figures recomputed from the rows: "
                                                                 f"{d}") for d in diffs[:20]])


def open_throughput(path: str | Path) -> Throughput:
    """Open, validate and recompute a throughput package; raise ValidationFailed when its summary is not
    what its rows give."""
    pkg = open_package(path, kind=THROUGHPUT.name)
    try:
        return read_throughput(pkg, str(path))
    except BaseException:
        pkg.close()
        raise


def read_throughput(pkg: Package, label: str) -> Throughput:
    """`open_throughput` of a throughput package already open (and validated), named `label` in errors; the
    caller closes it."""
    extra = THROUGHPUT.extra_of(pkg.manifest, label)
    assert isinstance(extra, ThroughputExtra)
    requests = list(pkg.iter_rows("bench_request_row.v1"))
    windows = list(pkg.iter_rows("bench_window_row.v1"))
    anchor = None
    if any(f.path == ANCHOR for f in pkg.manifest.files):  # listed, so pinned (unlisted files are refused)
        anchor = (ANCHOR_TOOL, _read_anchor(pkg.read_bytes(ANCHOR), f"{label}/{ANCHOR}"))
    try:
        fresh = figures.summarize(extra.arm, requests, windows, extra.run.stall_s, anchor)
    except ValueError as e:
        raise AuditError(str(e), path=f"{label}/{ANCHOR}") from None
    stored = _stored_summary(pkg)
    _check(label, stored, fresh)
    return Throughput(pkg, stored, fresh, requests=requests, windows=windows)


def open_telemetry(path: str | Path, throughput: Throughput | None = None) -> Telemetry:
    """Open, validate and recompute a telemetry package; when `throughput` is given, check that the
    telemetry names it (by content digest)."""
    pkg = open_package(path, kind=TELEMETRY.name)
    try:
        return read_telemetry(pkg, str(path), throughput)
    except BaseException:
        pkg.close()
        raise


def read_telemetry(pkg: Package, label: str, throughput: Throughput | None = None) -> Telemetry:
    """`open_telemetry` of a telemetry package already open (and validated), named `label` in errors; the
    caller closes it."""
    extra = TELEMETRY.extra_of(pkg.manifest, label)
    assert isinstance(extra, TelemetryExtra)
    link = extra.throughput or ThroughputLink()
    if throughput is not None:
        TELEMETRY.check_link(pkg, throughput.pkg, label)
    gpu_rows = list(pkg.iter_rows("gpu_sample_row.v1"))
    gpm_rows = list(pkg.iter_rows("gpm_sample_row.v1"))
    fresh = telemetry.summarize((str(link.package_id), str(link.digest)), extra.status, len(extra.devices),
                                [(w[0], w[1], w[2]) for w in extra.windows], gpu_rows, gpm_rows)
    stored = _stored_summary(pkg)
    _check(label, stored, fresh)
    return Telemetry(pkg, stored, fresh, gpu_rows=gpu_rows, gpm_rows=gpm_rows)


def find_telemetry(throughput_path: str | Path, given: str | Path | None) -> Path | None:
    """The telemetry package to read with a throughput package: the one given, else `PACKAGE.telemetry`
    when it exists."""
    if given is not None:
        return Path(given)
    p = telemetry_path(throughput_path)
    return p if p.exists() else None


# --------------------------------------------------------------------------- the throughput and telemetry kinds


class RunSettings(Extra):
    """The settings two arms must share to be compared (`run_settings`)."""

    model: str | None = None
    prompt_tokens: int | None = None
    max_tokens: int | None = None
    ignore_eos: bool | None = None
    concurrency: int | None = None
    servers: int | None = None
    windows: int | None = None
    window_s: float | None = None
    stall_s: float = Field(strict=True)
    """Seconds without a token after which a request counts as stalled: the figures depend on it."""
    warmup_requests: int | None = None


class ThroughputExtra(Extra):
    """`provenance.extra` of a throughput package (what `write` records)."""

    arm: str = ""
    """The arm's name."""
    run: RunSettings
    """The settings two arms must share to be compared."""
    config: dict[str, Any] | None = None
    """The run's whole configuration."""
    prompt: dict[str, Any] | None = None
    """How the prompts were made and counted."""
    servers: list[dict[str, Any]] | None = None
    """Each server: url, model, root, context length, version."""
    notes: list[str] | None = None
    """What the run noticed (stalls, errors)."""
    telemetry: dict[str, Any] | str | None = None
    """The linked telemetry package and its status, or `off`."""
    anchor: dict[str, Any] | None = None
    """The anchor tool's command, exit code and time, when one ran."""


class ThroughputLink(Extra):
    """The throughput package a telemetry package belongs to."""

    package_id: str | None = None
    digest: str | None = None


class TelemetryExtra(Extra):
    """`provenance.extra` of a telemetry package (what `write_telemetry` records)."""

    throughput: ThroughputLink | None = None
    """The throughput run, by id and content digest."""
    status: str = ""
    """Whether the counters were read: `ok`, or why not."""
    devices: list[dict[str, Any]] = []
    """Each GPU sampled: NVML index, name, uuid."""
    counters: dict[str, Any] | None = None
    """Per GPU, whether each counter could be read."""
    events: list[dict[str, Any]] | None = None
    """What happened while sampling (a GPU lost, a read failed)."""
    windows: list[tuple[int, float, float]] = []
    """The throughput run's windows: (index, start, end)."""
    sampler: dict[str, Any] | None = None
    """The sampler's rates, cost and versions."""


def _show_throughput(t: Throughput) -> list[str]:
    tok = t.summary.tok_s  # recomputed from the rows (and equal to the stored summary: read_throughput checks)
    if tok.mean is not None and tok.n:
        spread = f" ± {2 * tok.se:.1f} (2·se)" if tok.se is not None else ""
        return [f"tok/s      {tok.mean:.1f}{spread} over {tok.n} valid windows, "
                f"{tok.min:.1f} to {tok.max:.1f} by window (audit bench report for all figures)"]
    return []


THROUGHPUT = register_kind(Kind(
    "throughput", "a decode-throughput run: its streamed requests, timed windows and summary (`audit bench`)",
    rows={"bench_request_row.v1": BenchRequestRow, "bench_window_row.v1": BenchWindowRow},
    row_keys={"bench_request_row.v1": ("request",), "bench_window_row.v1": ("window",)},
    schemas={"throughput_summary.v1": figures.ThroughputSummary}, extra=ThroughputExtra,
    reader=read_throughput, viewer=_show_throughput), __name__)

TELEMETRY = register_kind(Kind(
    "telemetry", "GPU counters sampled during a throughput run (NVML, GPM), linked to it by digest",
    rows={"gpu_sample_row.v1": GpuSampleRow, "gpm_sample_row.v1": GpmSampleRow},
    schemas={"telemetry_summary.v1": telemetry.TelemetrySummary}, extra=TelemetryExtra, reader=read_telemetry,
    link=Link("throughput", "throughput")), __name__)

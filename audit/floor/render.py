"""The floor as a table by role and dtype: printed by `audit floor` and stored as `floor.txt`."""

from __future__ import annotations

from audit.floor.report import BandwidthRef, FloorReport, FloorReportV1, WeightRowV2


def bandwidth_label(ref: BandwidthRef) -> str:
    if ref.source == "flag":
        return f"{ref.tbps_per_gpu:.3f} TB/s from --hbm-tbps"
    d = min(ref.devices, key=lambda d: d.tbps)
    return (f"{ref.tbps_per_gpu:.3f} TB/s from NVML ({d.name}: {d.bus_width_bits}-bit bus x "
            f"{d.max_memory_clock_mhz} MHz x 2)")


def _sig(x: float) -> str:
    """Four significant digits, without exponent notation for the sizes a floor has."""
    if x >= 100:
        return f"{x:,.1f}"
    if x >= 1:
        return f"{x:.3f}"
    return f"{x:.4g}" if x >= 1e-4 else f"{x:.3e}"


def _parameters(w: object, elements: int) -> str:
    """v2: the row's parameters, or its scale elements in parentheses when it holds nothing else."""
    if not isinstance(w, WeightRowV2):
        return f"{elements:,}"
    return f"({w.elements:,})" if w.parameters == 0 and w.elements else f"{w.parameters:,}"


def render(report: FloorReportV1) -> list[str]:
    """The table lines (no trailing newline on each); a v1 report renders as v1 did (scales counted)."""
    head = (f"{'role':<30} {'dtype':<16} {'tensors':>8} {'parameters':>17} {'stored bytes':>19}  "
            f"{'read per token':<30} {'bytes/token':>19}")
    lines = [head]
    for w in report.weights:
        role = w.role if w.role == w.kind else f"{w.role}:{w.kind}"
        dtype = w.dtype if w.dtype == w.engine_dtype else f"{w.dtype}>{w.engine_dtype}"
        tensors = f"{w.tensors:,}" if w.tensors else "-"
        elements = _parameters(w, w.elements) if w.tensors else "-"
        stored = f"{w.stored_bytes:,}" if w.tensors else "-"
        lines.append(f"{role:<30} {dtype:<16} {tensors:>8} {elements:>17} {stored:>19}  "
                     f"{w.reading:<30} {w.active_bytes:>19,.0f}")
    for c in report.caches:
        role = f"{c.role}:{c.part}"
        read = f"{c.tokens:,} tok x {c.layers} layers" if c.role == "kv_cache" else f"{c.layers} layers"
        lines.append(f"{role:<30} {c.dtype:<16} {'-':>8} {'-':>17} {'-':>19}  {read:<30} {c.active_bytes:>19,}")
    total_tensors = sum(w.tensors for w in report.weights)
    params = report.total_parameters if isinstance(report, FloorReport) else report.total_elements
    lines.append(f"{'total':<30} {'':<16} {total_tensors:>8,} {params:>17,} "
                 f"{report.total_stored_bytes:>19,}  {'':<30} {report.floor.bytes_per_token:>19,.0f}")
    if isinstance(report, FloorReport) and report.quant_scale_elements:
        lines.append(f"parameters exclude {report.quant_scale_elements:,} elements of quantization scales "
                     f"(in parentheses where a row holds only scales)")
    lines.append("bytes/token by dtype: " + ", ".join(f"{d} {v:,.0f}" for d, v in report.by_dtype.items()))
    f = report.floor
    gpus = f"{f.gpus} GPU" + ("s" if f.gpus > 1 else "")
    lines.append(f"floor: {f.bytes_per_token:,.0f} bytes/token / ({gpus} x {bandwidth_label(report.bandwidth)}) "
                 f"= {_sig(f.ms_per_token)} ms/token, {_sig(f.tokens_per_s)} tok/s "
                 f"(context {report.options.context:,}{', with MTP' if report.options.with_mtp else ''})")
    short = [s for s in report.shards if s.data != "complete"]
    if short:
        absent = sum(s.data == "absent" for s in short)
        parts = ([f"{absent} header-only"] if absent else []) + \
            ([f"{len(short) - absent} truncated"] if len(short) > absent else [])
        lines.append(f"note: {len(short)} of {len(report.shards)} safetensors files hold less data than their "
                     f"headers declare ({', '.join(parts)}); sizes come from the headers")
    lines += [f"note: {n}" for n in report.notes]
    return lines

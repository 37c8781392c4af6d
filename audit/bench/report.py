"""Text and a PNG timeline of a throughput run (and its telemetry), and of a comparison of two arms."""

from __future__ import annotations

import math
import os
import uuid
from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

from audit.bench.figures import Comparison, ThroughputSummary, step_figures
from audit.bench.store import Telemetry, Throughput
from audit.errors import AuditError
from audit.views import text_table


def _f(x: float | None, nd: int = 1, unit: str = "") -> str:
    return "-" if x is None else f"{x:,.{nd}f}{unit}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}%"


def ratio_text(mean: float | None, se: float | None, lo: float | None, hi: float | None, n: int) -> str:
    """`2.04×, 2.02–2.05 by window pair, ± 0.02 (2·se, 3 pairs)`."""
    if mean is None:
        return "no valid window pair"
    text = f"{mean:.2f}×, {lo:.2f}–{hi:.2f} by window pair (worst to best)"
    return text + (f", ± {2 * se:.2f} (2·se, {n} pairs)" if se is not None else f" ({n} pair)")


def throughput_lines(t: Throughput) -> list[str]:
    s: ThroughputSummary = t.summary
    m = t.pkg.manifest
    x = t.extra
    run = x.get("run", {})
    prov = m.provenance
    engine = f" ({prov.engine} {prov.engine_version})" if prov.engine_version else ""
    lines = [f"throughput package {m.package_id} (arm {s.arm})",
             f"  model {prov.model}{engine} on {prov.hardware or 'unrecorded hardware'}"]
    prompt = x.get("prompt", {})
    eos = "ignore_eos" if run.get("ignore_eos") else "stops at EOS"
    servers = run.get("servers", 1)
    lines.append(f"  prompt {run.get('prompt_tokens')} tokens (counted by the server's /tokenize, filler "
                 f"{prompt.get('filler')!r}), output cap {run.get('max_tokens')}, {eos}, greedy; "
                 f"{run.get('concurrency')} request(s) in flight on {servers} server(s)")
    rq = s.requests
    lines.append(f"  {len(s.windows)} windows of {run.get('window_s'):g} s after {rq.warmup} warm-up requests; "
                 f"{rq.timed} timed requests ({rq.done} done, {rq.cut} cut at the end, {rq.error} failed)")
    rows = []
    for w in s.windows:
        rows.append([str(w.window), _f(w.tok_s) if w.valid else f"({_f(w.tok_s)})", f"{w.tokens:,}",
                     str(w.requests_started), _f(w.ttft_median_ms, 1, " ms"), _f(w.longest_silence_s, 2, " s"),
                     "yes" if w.valid else f"no: {w.invalid_reason}"])
    lines += text_table([["window", "tok/s", "tokens", "requests", "TTFT median", "longest silence", "valid"], *rows])
    ts = s.tok_s
    if ts.n:
        spread = f" ± {2 * ts.se:.1f} (2·se)," if ts.se is not None else ","
        lines.append(f"tok/s over {ts.n} valid window(s): {_f(ts.mean)}{spread} {_f(ts.min)}–{_f(ts.max)} by window")
    else:
        lines.append("tok/s: no valid window")
    d = s.decode
    lines.append(f"decode after the first token: per request mean {_f(d.per_request_mean)} tok/s (min "
                 f"{_f(d.per_request_min)}, max {_f(d.per_request_max)}; {d.requests} requests); overall "
                 f"{d.tokens:,} tokens / {_f(d.seconds, 2)} s = {_f(d.overall_tok_s)} tok/s")
    lines.append(f"time to first token: median {_f(s.ttft.median_ms, 1, ' ms')}, mean {_f(s.ttft.mean_ms, 1, ' ms')} "
                 f"({s.ttft.requests} requests)")
    c = s.chunks
    lines.append(f"streaming: {c.with_tokens:,} chunks with tokens, {c.bundled:,} bundled (several tokens in one "
                 f"chunk, {c.tokens_in_bundled:,} tokens)")
    if s.spec is not None:
        sp = s.spec
        per = ", ".join(_f(w.spec_mean_acceptance_length, 2) for w in s.windows if w.valid)
        lines.append(f"speculative decoding: {sp.draft_tokens:,.0f} draft tokens, {sp.accepted_tokens:,.0f} accepted "
                     f"({_pct(100 * sp.acceptance_rate if sp.acceptance_rate is not None else None)}), mean acceptance "
                     f"length {_f(sp.mean_acceptance_length, 2)} (per window: {per})")
        st = step_figures(s, t.requests)
        ceiling = (f"; {st.at_ceiling} of {st.requests} requests ran at the ceiling of {st.ceiling} tokens per step, "
                   f"{st.over_ceiling_chunks} chunks over it") if st.ceiling is not None else "; ceiling unknown"
        lines.append(f"engine steps from the stream: {_f(st.overall, 2)} tokens per decode step (per request mean "
                     f"{_f(st.per_request_mean, 2)}, {_f(st.per_request_min, 2)}–{_f(st.per_request_max, 2)})"
                     f"{ceiling}; "
                     f"counters {_f(st.counters_tokens_per_step, 2)}, stream / counters "
                     f"{_f(st.overall_over_counters, 3)}")
    if s.anchor is not None:
        a = s.anchor
        lines.append(f"{a.tool} on the same server: {_f(a.output_tok_s)} tok/s, TTFT median "
                     f"{_f(a.ttft_median_ms, 1, ' ms')} ({a.completed} requests, mean prompt "
                     f"{_f(a.mean_input_tokens, 0)} and output {_f(a.mean_output_tokens, 0)} tokens); ours / its: "
                     f"tok/s {_f(a.ours_over_anchor_tok_s, 3)}, TTFT median {_f(a.ours_over_anchor_ttft_median, 3)}")
    elif isinstance(x.get("anchor"), dict):
        lines.append(f"anchor command failed (exit code {x['anchor'].get('exit_code')}): see anchor.log")
    for note in x.get("notes", []):
        lines.append(f"note: {note}")
    return lines


def telemetry_lines(tel: Telemetry | None, why_none: str | None = None) -> list[str]:
    if tel is None:
        return [f"telemetry: {why_none or 'none'}"]
    x = tel.extra
    s = tel.summary
    if not x.get("devices"):
        return [f"telemetry {tel.pkg.manifest.package_id}: counters {x.get('status')}"]
    names = ", ".join(f"{d['index']}: {d['name']}" for d in x["devices"])
    smp = x.get("sampler", {})
    cost = smp.get("cpu_fraction_of_one_core")
    lines = [f"telemetry {tel.pkg.manifest.package_id}: {len(x['devices'])} GPU(s) ({names}), status {x.get('status')}",
             f"  sampled at {_f(smp.get('hz'), 0)} Hz, GPM every {smp.get('gpm_interval_s')} s; sampler used "
             f"{_pct(100 * cost if cost is not None else None)} of one core"]
    ng = s.gpus
    rows = []
    for w in s.windows:
        clocks = [g.sm_clock_mhz for g in w.gpus if g.sm_clock_mhz is not None]
        rows.append([str(w.window), _pct(w.mean_kernel_running_pct), _pct(w.mean_sm_util_pct),
                     _pct(w.mean_dram_bw_util_pct), _pct(w.mean_any_tensor_util_pct), _pct(w.mean_sm_occupancy_pct),
                     _f(w.power_w_sum_over_gpus), _f(w.energy_j_sum_over_gpus, 0),
                     _f(sum(clocks) / len(clocks) if clocks else None, 0)])
    lines += text_table([["window", "kernel running (utilization.gpu)", "SM_UTIL", "DRAM_BW_UTIL", "ANY_TENSOR",
                          "SM_OCCUPANCY", f"power W (sum of {ng} GPU)", "energy J", "SM MHz"], *rows])
    lines.append("  (percentages are means over the GPUs; kernel running = share of time any kernel ran, "
                 "SM_UTIL = share of SMs busy)")
    unsupported = defaultdict(list)
    for gpu, counters in sorted(x.get("counters", {}).items()):
        for name, state in counters.items():
            if state != "ok":
                unsupported[state].append(f"GPU {gpu} {name}")
    for state, what in sorted(unsupported.items()):
        lines.append(f"{state}: {', '.join(what)}")
    for e in x.get("events", []):
        gpu = "" if e.get("gpu") is None else f"GPU {e['gpu']}: "
        lines.append(f"event: {gpu}{e.get('event')}")
    return lines


def compare_lines(c: Comparison) -> list[str]:
    lines = [f"A: {c.a} (arm {c.a_arm})", f"B: {c.b} (arm {c.b_arm})"]
    lines += text_table([["window", "A tok/s", "B tok/s", "A/B"],
                         *([str(p.window), _f(p.a_tok_s), _f(p.b_tok_s), f"{p.ratio:.3f}×"] for p in c.pairs)])
    lines.append(f"tok/s A/B: {ratio_text(c.ratio_mean, c.ratio_se, c.ratio_min, c.ratio_max, len(c.pairs))}")
    lines.append(f"decode after the first token (mean per request) A/B: "
                 f"{'-' if c.decode_ratio is None else f'{c.decode_ratio:.2f}×'}")
    lines.append(f"TTFT median A/B: {'-' if c.ttft_ratio is None else f'{c.ttft_ratio:.2f}×'}")
    lines += [f"skipped: {s}" for s in c.skipped]
    lines += [f"note: {n}" for n in c.notes]
    return lines


# --------------------------------------------------------------------------- the PNG


def timeline_png(t: Throughput, tel: Telemetry | None, out: Path, *, why_no_telemetry: str | None = None) -> None:
    """Three panels on one time axis (seconds from the first window): tok/s (per window, and per second
    from the token arrivals), utilization.gpu against GPM SM_UTIL and DRAM_BW_UTIL, and power."""
    try:
        import matplotlib
    except ImportError:
        raise AuditError("matplotlib is not installed: give --no-png, or install matplotlib") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = t.summary
    t0 = s.windows[0].start if s.windows else 0.0
    fig, axes = plt.subplots(3, 1, figsize=(11, 8.5), sharex=True, constrained_layout=True)
    ax = axes[0]
    span = s.windows[-1].end - t0 if s.windows else 0.0
    arrivals = sorted(a for r in t.requests if r.phase == "timed"
                      for a in (r.started_at + x - t0 for x in r.token_times) if 0 <= a < span)
    if arrivals:
        # Per-second token counts over the windows; the last, shorter bin as a rate.
        edges = [float(i) for i in range(math.ceil(span))] + [span]
        counts = [0] * (len(edges) - 1)
        for a in arrivals:
            counts[min(len(counts) - 1, int(a))] += 1
        rates = [c / (b - a) for c, (a, b) in zip(counts, pairwise(edges), strict=True)]  # a count per bin
        ax.stairs(rates, edges, color="0.6", lw=0.8, label="tokens per second")
    for w in s.windows:
        ax.hlines(w.tok_s, w.start - t0, w.end - t0, colors="C0" if w.valid else "C3", lw=2.5,
                  label="window tok/s" if w.window == 0 else None)
        ax.text((w.start + w.end) / 2 - t0, w.tok_s, f"{w.tok_s:.1f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("tokens / s")
    ax.set_title(f"{t.pkg.manifest.package_id} (arm {s.arm})", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_ylim(bottom=0)

    ax_u, ax_p = axes[1], axes[2]
    if tel is not None and tel.gpu_rows:
        by_t: dict[float, list[Any]] = defaultdict(list)
        for r in tel.gpu_rows:
            by_t[r.t].append(r)
        ts = sorted(by_t)
        util = [_mean([r.kernel_running_pct for r in by_t[x]]) for x in ts]
        # A sum over every GPU the run saw, or nothing (a lost GPU must not look like a power drop).
        power = [_sum([r.power_w for r in by_t[x]]) if len(by_t[x]) == tel.summary.gpus else None for x in ts]
        ax_u.plot([x - t0 for x in ts], util, color="C1", lw=1, label="utilization.gpu (any kernel running)")
        gpm: dict[tuple[float, float], list[Any]] = defaultdict(list)
        for m in tel.gpm_rows:
            gpm[(m.t_start, m.t_end)].append(m)
        spans = sorted(gpm)
        for name, label, color, style in (("sm_util_pct", "GPM SM_UTIL (share of SMs busy)", "C2", "-"),
                                          ("dram_bw_util_pct", "GPM DRAM_BW_UTIL", "C4", "-"),
                                          ("any_tensor_util_pct", "GPM ANY_TENSOR_UTIL", "C5", "--")):
            ys = [_mean([getattr(r, name) for r in gpm[k]]) for k in spans]
            if any(y is not None for y in ys):
                ax_u.plot([(a + b) / 2 - t0 for a, b in spans], [math.nan if y is None else y for y in ys],
                          color=color, ls=style, lw=1, label=label)
        ax_u.set_ylim(0, 105)
        ax_u.legend(loc="center right", fontsize=8)
        ax_p.plot([x - t0 for x in ts], [math.nan if p is None else p for p in power], color="C3", lw=1)
        ax_p.set_ylabel(f"power, W (sum of {tel.summary.gpus} GPU)")
        ax_p.set_ylim(bottom=0)
    else:
        why = why_no_telemetry or (f"counters {tel.extra.get('status')}" if tel is not None else "no telemetry")
        for a in (ax_u, ax_p):
            a.text(0.5, 0.5, why, ha="center", va="center", transform=a.transAxes, fontsize=9)
    ax_u.set_ylabel("percent (mean over GPUs)")
    for a in axes:
        for w in s.windows:
            a.axvline(w.start - t0, color="0.8", lw=0.6)
            if not w.valid:
                a.axvspan(w.start - t0, w.end - t0, color="C3", alpha=0.08)
        if s.windows:
            a.axvline(s.windows[-1].end - t0, color="0.8", lw=0.6)
    axes[-1].set_xlabel("seconds from the start of the first window")
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
        os.replace(tmp, out)
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)


def _mean(values: list[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return sum(vs) / len(vs) if vs else None


def _sum(values: list[float | None]) -> float | None:
    return sum(values) if values and all(v is not None for v in values) else None  # type: ignore[arg-type]

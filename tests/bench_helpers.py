"""Deterministic throughput runs for `audit bench` tests: rows made by arithmetic, not by timing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from audit.bench import promtext, store
from audit.bench.telemetry import DeviceInfo, SamplerResult
from audit.bench.throughput import BenchConfig, RunResult
from audit.bench.rows import BenchRequestRow, BenchWindowRow

T0 = 1_700_000_000.0


def synthetic_run(arm: str = "a", *, interval: float = 0.01, tokens: int = 8, ttft: float = 0.05,
                  windows: int = 3, window_s: float = 2.0, stall_s: float = 1.0, gap: tuple[float, float] | None = None,
                  error_at: float | None = None, spec: tuple[int, int] | None = None, bundle: int = 1,
                  telemetry: bool = True, gpus: int = 1, anchor: Path | None = None) -> RunResult:
    """Back-to-back requests of `tokens` tokens: the first after `ttft`, then one every `interval` s
    (`bundle` tokens share each arrival). `gap` = (at, seconds): no request runs in that span (a stall);
    `error_at`: a request that fails at that offset. `spec` = (draft tokens, accepted) per token."""
    t0, end = T0, T0 + windows * window_s
    rows = [BenchRequestRow(request=0, phase="warmup", prompt_index=0, started_at=t0 - 1.0,
                            first_token_at=round(t0 - 1.0 + ttft, 6), finished_at=t0 - 0.5, prompt_tokens=64,
                            output_tokens=1, max_tokens=tokens, token_times=[ttft], chunks=1, bundled_chunks=0,
                            finish_reason="length", ended="done")]
    t, n = t0, 1
    while t < end:
        if gap and gap[0] <= t - t0 < gap[0] + gap[1]:
            t = t0 + gap[0] + gap[1]
            continue
        start = round(t, 6)
        if error_at is not None and t - t0 >= error_at and not any(r.ended == "error" for r in rows):
            rows.append(BenchRequestRow(request=n, phase="timed", prompt_index=n, started_at=start,
                                        finished_at=round(start + 0.2, 6), output_tokens=0, max_tokens=tokens,
                                        token_times=[], chunks=0, bundled_chunks=0, ended="error",
                                        error="POST /v1/completions: HTTP 500: injected"))
            t, n = start + 0.2, n + 1
            continue
        offsets = [round(ttft + (j // bundle) * interval, 6) for j in range(tokens)]
        ended, finish = "done", "length"
        if start + offsets[-1] >= end:  # the client stops at the first arrival after the end
            first_after = next(j for j, o in enumerate(offsets) if start + o >= end)
            last = offsets[first_after]
            offsets = [o for o in offsets if o <= last]
            ended, finish = "cut", None
        chunks = len(set(offsets))
        bundled = sum(offsets.count(o) > 1 for o in set(offsets))
        finished = round(start + offsets[-1] + 0.001, 6)
        rows.append(BenchRequestRow(
            request=n, phase="timed", prompt_index=n, started_at=start, first_token_at=round(start + offsets[0], 6),
            finished_at=finished, prompt_tokens=64 if ended == "done" else None, output_tokens=len(offsets),
            max_tokens=tokens, token_times=offsets, chunks=chunks, bundled_chunks=bundled, finish_reason=finish,
            ended=ended))
        t, n = finished, n + 1
    wins = []
    for k in range(windows):
        s, e = round(t0 + k * window_s, 6), round(t0 + (k + 1) * window_s, 6)

        def counters(x: float) -> dict[str, float]:
            gen = float(sum(1 for r in rows for o in r.token_times if r.started_at + o < x))
            c = {promtext.GENERATION_TOKENS: gen}
            if spec:
                c.update({promtext.SPEC_DRAFTS: gen, promtext.SPEC_DRAFT_TOKENS: gen * spec[0],
                          promtext.SPEC_ACCEPTED: gen * spec[1]})
            return c
        wins.append(BenchWindowRow(window=k, start=s, end=e, server_counters_start=counters(s),
                                   server_counters_end=counters(e)))
    cfg = BenchConfig(arm=arm, servers=("http://127.0.0.1:9",), prompt_tokens=64, max_tokens=tokens, ignore_eos=True,
                      windows=windows, window_s=window_s, stall_s=stall_s)
    tel = None
    if telemetry:
        gpu_rows: list[dict[str, Any]] = []
        gpm_rows: list[dict[str, Any]] = []
        i = 0
        while t0 - 0.5 + i * 0.5 <= end + 0.5:
            x = round(t0 - 0.5 + i * 0.5, 6)
            for g in range(gpus):
                gpu_rows.append({"t": x, "gpu": g, "kernel_running_pct": 99.0, "memory_busy_pct": 40.0 + g,
                                 "power_w": 400.0 + 10 * g, "energy_j": 1000.0 + 200.0 * i, "sm_clock_mhz": 1980,
                                 "mem_clock_mhz": 2619, "temperature_c": None})
                if i:
                    gpm_rows.append({"t_start": round(x - 0.5, 6), "t_end": x, "gpu": g, "sm_util_pct": 40.0 + i % 2,
                                     "sm_occupancy_pct": None, "any_tensor_util_pct": 8.0, "dram_bw_util_pct": 70.0})
            i += 1
        status = {str(g): {"temperature_c": "unsupported", "sm_occupancy_pct": "unsupported"} for g in range(gpus)}
        tel = SamplerResult(status="ok", devices=[DeviceInfo(g, "NVIDIA H200", f"GPU-{g}") for g in range(gpus)],
                            counters=status, gpu_rows=gpu_rows, gpm_rows=gpm_rows, events=[], info={}, hz=2.0,
                            gpm_interval_s=0.5, cpu_s=0.01, wall_s=10.0, late_ticks=0)
    return RunResult(config=cfg, rows=rows, windows=wins,
                     servers=[{"url": "http://127.0.0.1:9", "model": "m", "root": "m", "max_model_len": 4096,
                               "version": "0.26.0"}],
                     model="m", prompt={"tokens": 64, "filler": "the", "marker": "#{index:05d}"}, telemetry=tel,
                     anchor={"command": "stub", "exit_code": 0, "seconds": 1.0} if anchor else None,
                     anchor_result=anchor)


def write_run(tmp: Path, name: str, result: RunResult) -> tuple[Path, Path]:
    out = tmp / name
    tel = store.telemetry_path(out)
    store.write(result, out, tel if result.telemetry is not None else None)
    return out, tel

"""Throughput figures, each recomputed from a package's raw rows.

Definitions (a window k is the half-open run-clock interval [start_k, end_k); windows follow each
other without gaps, and requests run across their edges without pause):

- Generated tokens of window k: the token arrivals (request start + `token_times`) of timed requests
  that fall in [start_k, end_k). A request that straddles an edge gives each window the tokens that
  arrived in it; tokens of a bundled chunk all count at its arrival.
- tok/s of window k = its generated tokens / (end_k - start_k). Time to first token, gaps between
  requests and client overhead are inside the window, so they count against it (the lab's method).
- A window is invalid, with a reason, when a request ended in error inside it, or when no token
  arrived for longer than the stall threshold (`stall_s`) inside it (the window's edges count as
  arrivals, so a window with no token at all is a stall too). Invalid windows are reported and left
  out of every run-level figure; so are the requests that started in them.
- The run's tok/s: mean of the valid windows' tok/s, its standard error (sample sd / sqrt(n)),
  min and max.
- Decode rate of a request (tokens after the first one): (output tokens - 1) / (last token time -
  first token time), for timed requests started in a valid window with at least two tokens at
  distinct times; reported as mean, min and max over requests, and as total decode tokens / total
  decode time over the same requests. Requests cut at the end of the last window count with the
  tokens they got.
- Time to first token: first token time - start, median and mean over the same requests (those
  with a token).
- Speculative decoding, per window: the differences of the server's counters read at the window's
  edges: drafts, draft tokens, accepted tokens; acceptance rate = accepted / draft tokens; mean
  acceptance length = 1 + accepted / drafts (vLLM's definition, bonus token included).
- Engine steps per request (`step_figures`, from the stream, not stored in the summary): vLLM streams
  one chunk per engine step of a request, so a request's chunks are its steps; tokens sharing an
  arrival time are one chunk. Its first chunk is the prefill step; tokens per decode step = (output
  tokens - first chunk's tokens) / (chunks - 1), over the requests the decode figures count. With k
  draft tokens per step (the counters' draft tokens / drafts, when whole) the ceiling is k + 1 tokens
  per step; a request ran at the ceiling when every decode chunk but its last carried k + 1 tokens. A
  chunk over the ceiling means the reader fell behind and vLLM merged steps: chunks are then not steps.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from pydantic import BaseModel, ConfigDict

from audit import schemas
from audit.bench import promtext
from audit.bench.rows import BenchRequestRow, BenchWindowRow


class FiguresDoc(BaseModel):
    """Base of the derived figure documents (bench summaries, comparisons, telemetry summaries)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class WindowFigures(FiguresDoc):
    """The figures of one timed window."""

    window: int
    """Window index, from 0."""
    start: float
    """Run-clock start (Unix seconds)."""
    end: float
    """Run-clock end."""
    duration_s: float
    """end - start."""
    tokens: int
    """Generated tokens that arrived in the window."""
    tok_s: float
    """tokens / duration_s."""
    requests_started: int
    """Timed requests that started in the window."""
    errors: int
    """Requests that ended in error in the window."""
    ttft_median_ms: float | None = None
    """Median time to first token of the requests that started in the window, ms."""
    longest_silence_s: float
    """Longest interval in the window with no token arriving (the edges count as arrivals)."""
    valid: bool
    """False when the window must not be averaged: see `invalid_reason`."""
    invalid_reason: str | None = None
    """Why the window is invalid."""
    server_generation_tokens: float | None = None
    """Difference of the server's `vllm:generation_tokens_total` over the window (a cross-check: the server
    counts a token when it is generated, the client when it arrives)."""
    spec_drafts: float | None = None
    """Speculative decoding: drafts over the window (`vllm:spec_decode_num_drafts_total`)."""
    spec_draft_tokens: float | None = None
    """Draft tokens proposed over the window."""
    spec_accepted_tokens: float | None = None
    """Draft tokens accepted over the window."""
    spec_acceptance_rate: float | None = None
    """accepted / draft tokens."""
    spec_mean_acceptance_length: float | None = None
    """1 + accepted / drafts."""


class WindowSpread(FiguresDoc):
    """A figure over the valid windows."""

    # Named `Spread` in the committed throughput_summary.v1 schema ($defs key and title): pinned so.
    __qualname__ = "Spread"
    model_config = ConfigDict(title="Spread")

    n: int
    """Valid windows."""
    mean: float | None = None
    """Mean over the valid windows."""
    se: float | None = None
    """Standard error of the mean: sample standard deviation / sqrt(n); null below two windows."""
    min: float | None = None
    """Lowest window."""
    max: float | None = None
    """Highest window."""


class DecodeFigures(FiguresDoc):
    """Decode rate after the first token."""

    requests: int
    """Requests measured (timed, started in a valid window, at least two tokens at distinct times)."""
    per_request_mean: float | None = None
    """Mean over requests of (tokens - 1) / (last token time - first token time), tok/s."""
    per_request_min: float | None = None
    """Slowest request, tok/s."""
    per_request_max: float | None = None
    """Fastest request, tok/s."""
    tokens: int
    """Sum over those requests of tokens - 1."""
    seconds: float
    """Sum over those requests of last token time - first token time."""
    overall_tok_s: float | None = None
    """tokens / seconds."""


class TtftFigures(FiguresDoc):
    """Time to first token (by token: the first chunk that carried one)."""

    requests: int
    """Timed requests started in a valid window that got a token."""
    median_ms: float | None = None
    """Median, ms."""
    mean_ms: float | None = None
    """Mean, ms."""


class ChunkFigures(FiguresDoc):
    """How tokens were streamed (timed requests)."""

    with_tokens: int
    """Stream events that carried at least one token."""
    bundled: int
    """Events that carried more than one token."""
    tokens_in_bundled: int
    """Tokens that came in bundled events."""


class SpecFigures(FiguresDoc):
    """Speculative decoding over the valid windows (sums of the per-window differences)."""

    drafts: float
    """Drafts."""
    draft_tokens: float
    """Draft tokens proposed."""
    accepted_tokens: float
    """Draft tokens accepted."""
    acceptance_rate: float | None = None
    """accepted / draft tokens."""
    mean_acceptance_length: float | None = None
    """1 + accepted / drafts."""


class StepFigures(FiguresDoc):
    """Tokens per engine step of each request, read from the stream, beside the server's counters."""

    requests: int
    """Requests counted: timed, started in a valid window, with at least one decode chunk."""
    draft_tokens_per_step: int | None = None
    """k: the counters' draft tokens / drafts over the valid windows, when that is a whole number."""
    ceiling: int | None = None
    """k + 1 tokens per step: every draft accepted plus the bonus token; null without k."""
    per_request_mean: float | None = None
    """Mean over requests of (output tokens - first chunk's tokens) / (chunks - 1)."""
    per_request_min: float | None = None
    """Lowest request."""
    per_request_max: float | None = None
    """Highest request."""
    overall: float | None = None
    """Decode tokens / decode chunks, summed over the requests."""
    at_ceiling: int | None = None
    """Requests whose every decode chunk but the last carried `ceiling` tokens."""
    over_ceiling_chunks: int | None = None
    """Chunks carrying more than `ceiling` tokens (steps merged by a slow reader)."""
    counters_tokens_per_step: float | None = None
    """1 + accepted / drafts from the server's counters over the valid windows (vLLM's mean acceptance
    length), the cross-check of `overall`."""
    overall_over_counters: float | None = None
    """overall / counters_tokens_per_step."""


class AnchorFigures(FiguresDoc):
    """The same server measured by `vllm bench serve`, from its saved result (`anchor.json`)."""

    tool: str
    """What produced the result."""
    output_tok_s: float
    """Its output token throughput (total output tokens / benchmark duration)."""
    ttft_median_ms: float | None = None
    """Its median TTFT (first chunk with choices), ms."""
    ttft_mean_ms: float | None = None
    """Its mean TTFT, ms."""
    completed: int
    """Requests it completed."""
    failed: int | None = None
    """Requests that failed."""
    mean_input_tokens: float | None = None
    """Mean prompt length it reported."""
    mean_output_tokens: float | None = None
    """Mean output length it reported."""
    ours_over_anchor_tok_s: float | None = None
    """Our mean tok/s over the valid windows / its output_tok_s."""
    ours_over_anchor_ttft_median: float | None = None
    """Our median TTFT / its median TTFT."""


class RequestCounts(FiguresDoc):
    """Requests of the run."""

    warmup: int
    """Warm-up requests (discarded)."""
    timed: int
    """Timed requests."""
    done: int
    """Timed requests that ended with [DONE]."""
    cut: int
    """Timed requests closed by the client after the last window."""
    error: int
    """Timed requests that ended in error."""


class ThroughputSummary(FiguresDoc):
    """`summary.json` of a throughput package: every figure recomputable from its rows (`recompute`)."""

    schema_version: int = 1
    """Version of this summary format."""
    arm: str
    """The run's arm label, e.g. `cuda-graphs`."""
    stall_s: float
    """The stall threshold the windows were judged with."""
    windows: list[WindowFigures]
    """Per window."""
    tok_s: WindowSpread
    """tok/s over the valid windows."""
    decode: DecodeFigures
    """Decode rate after the first token."""
    ttft: TtftFigures
    """Time to first token."""
    chunks: ChunkFigures
    """Streaming."""
    requests: RequestCounts
    """Request counts."""
    spec: SpecFigures | None = None
    """Speculative decoding, when the server reports its counters (it runs speculative decoding)."""
    anchor: AnchorFigures | None = None
    """`vllm bench serve` on the same server, when the run recorded it."""


# --------------------------------------------------------------------------- computing


def _sd(values: Sequence[float]) -> float | None:
    return statistics.stdev(values) if len(values) >= 2 else None


def spread(values: Sequence[float]) -> WindowSpread:
    if not values:
        return WindowSpread(n=0)
    sd = _sd(values)
    return WindowSpread(n=len(values), mean=math.fsum(values) / len(values),
                  se=sd / math.sqrt(len(values)) if sd is not None else None, min=min(values), max=max(values))


def _delta(w: BenchWindowRow, name: str) -> float | None:
    a, b = w.server_counters_start, w.server_counters_end
    if a is None or b is None or name not in b:
        return None
    return b[name] - a.get(name, 0.0)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def window_figures(w: BenchWindowRow, timed: Sequence[BenchRequestRow], arrivals: list[float],
                   stall_s: float) -> WindowFigures:
    lo = bisect.bisect_left(arrivals, w.start)
    hi = bisect.bisect_left(arrivals, w.end)
    inside = arrivals[lo:hi]
    points = [w.start, *inside, w.end]
    gaps = [b - a for a, b in pairwise(points)]
    silence = max(gaps)
    started = [r for r in timed if w.start <= r.started_at < w.end]
    errors = sorted((r for r in timed if r.ended == "error" and w.start <= r.finished_at < w.end),
                    key=lambda r: r.finished_at)
    ttfts = [(r.first_token_at - r.started_at) * 1000 for r in started if r.first_token_at is not None]
    reason = None
    if errors:
        r = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        reason = f"request {r.request} failed at +{r.finished_at - w.start:.1f} s: {r.error}{more}"
    elif silence > stall_s:
        at = points[gaps.index(silence)]
        reason = f"no token arrived for {silence:.1f} s from +{at - w.start:.1f} s (stall threshold {stall_s:g} s)"
    drafts = _delta(w, promtext.SPEC_DRAFTS)
    draft_tokens = _delta(w, promtext.SPEC_DRAFT_TOKENS)
    accepted = _delta(w, promtext.SPEC_ACCEPTED)
    return WindowFigures(
        window=w.window, start=w.start, end=w.end, duration_s=w.end - w.start, tokens=len(inside),
        tok_s=len(inside) / (w.end - w.start), requests_started=len(started), errors=len(errors),
        ttft_median_ms=statistics.median(ttfts) if ttfts else None, longest_silence_s=silence,
        valid=reason is None, invalid_reason=reason,
        server_generation_tokens=_delta(w, promtext.GENERATION_TOKENS), spec_drafts=drafts,
        spec_draft_tokens=draft_tokens, spec_accepted_tokens=accepted,
        spec_acceptance_rate=_ratio(accepted, draft_tokens),
        spec_mean_acceptance_length=1 + accepted / drafts if accepted is not None and drafts else None)


def anchor_figures(result: dict[str, Any], tool: str, ours_tok_s: float | None,
                   ours_ttft_ms: float | None) -> AnchorFigures:
    """Figures of a `vllm bench serve --save-result` JSON (v0.26.0 keys: `output_throughput`,
    `median_ttft_ms`, `mean_ttft_ms`, `completed`, `failed`, `total_input_tokens`, `total_output_tokens`)."""
    def num(key: str) -> float | None:
        v = result.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None

    tok_s = num("output_throughput")
    completed = result.get("completed")
    if tok_s is None or not isinstance(completed, int):
        raise ValueError("not a vllm bench serve result: no numeric output_throughput and completed")
    total_in, total_out = num("total_input_tokens"), num("total_output_tokens")
    median = num("median_ttft_ms")
    return AnchorFigures(
        tool=tool, output_tok_s=tok_s, ttft_median_ms=median, ttft_mean_ms=num("mean_ttft_ms"), completed=completed,
        failed=result.get("failed") if isinstance(result.get("failed"), int) else None,
        mean_input_tokens=total_in / completed if total_in is not None and completed else None,
        mean_output_tokens=total_out / completed if total_out is not None and completed else None,
        ours_over_anchor_tok_s=_ratio(ours_tok_s, tok_s), ours_over_anchor_ttft_median=_ratio(ours_ttft_ms, median))


def summarize(arm: str, requests: Sequence[BenchRequestRow], windows: Sequence[BenchWindowRow], stall_s: float,
              anchor: tuple[str, dict[str, Any]] | None = None) -> ThroughputSummary:
    """All figures of a run from its rows (see the module docstring for the definitions)."""
    requests = sorted(requests, key=lambda r: r.request)
    windows = sorted(windows, key=lambda w: w.window)
    timed = [r for r in requests if r.phase == "timed"]
    arrivals = sorted(r.started_at + t for r in timed for t in r.token_times)
    figs = [window_figures(w, timed, arrivals, stall_s) for w in windows]
    valid = [f for f in figs if f.valid]

    def in_valid_window(r: BenchRequestRow) -> bool:
        return any(f.start <= r.started_at < f.end for f in valid)

    counted = [r for r in timed if in_valid_window(r)]
    rates, dec_tokens, dec_secs = [], 0, []
    for r in counted:
        if r.output_tokens >= 2 and r.token_times[-1] > r.token_times[0]:
            span = r.token_times[-1] - r.token_times[0]
            rates.append((r.output_tokens - 1) / span)
            dec_tokens += r.output_tokens - 1
            dec_secs.append(span)
    seconds = math.fsum(dec_secs)
    ttfts = [(r.first_token_at - r.started_at) * 1000 for r in counted if r.first_token_at is not None]

    spec = None
    drafts = [f.spec_drafts for f in valid if f.spec_drafts is not None]
    if drafts:  # the server reports speculative decoding (even when it drafted nothing)
        d = math.fsum(drafts)
        dt = math.fsum(f.spec_draft_tokens or 0.0 for f in valid)
        acc = math.fsum(f.spec_accepted_tokens or 0.0 for f in valid)
        spec = SpecFigures(drafts=d, draft_tokens=dt, accepted_tokens=acc, acceptance_rate=_ratio(acc, dt),
                           mean_acceptance_length=1 + acc / d if d else None)

    tok_s = spread([f.tok_s for f in valid])
    ttft = TtftFigures(requests=len(ttfts), median_ms=statistics.median(ttfts) if ttfts else None,
                       mean_ms=math.fsum(ttfts) / len(ttfts) if ttfts else None)
    return ThroughputSummary(
        arm=arm, stall_s=stall_s, windows=figs, tok_s=tok_s,
        decode=DecodeFigures(requests=len(rates), per_request_mean=math.fsum(rates) / len(rates) if rates else None,
                             per_request_min=min(rates, default=None), per_request_max=max(rates, default=None),
                             tokens=dec_tokens, seconds=seconds,
                             overall_tok_s=dec_tokens / seconds if seconds else None),
        ttft=ttft,
        chunks=ChunkFigures(with_tokens=sum(r.chunks for r in timed), bundled=sum(r.bundled_chunks for r in timed),
                            tokens_in_bundled=sum(_bundled_tokens(r) for r in timed)),
        requests=RequestCounts(warmup=len(requests) - len(timed), timed=len(timed),
                               done=sum(r.ended == "done" for r in timed), cut=sum(r.ended == "cut" for r in timed),
                               error=sum(r.ended == "error" for r in timed)),
        spec=spec,
        anchor=anchor_figures(anchor[1], anchor[0], tok_s.mean, ttft.median_ms) if anchor else None)


def chunk_sizes(r: BenchRequestRow) -> list[int]:
    """Tokens of each chunk of a request: consecutive tokens with one arrival time came in one chunk."""
    sizes: list[int] = []
    last = None
    for t in r.token_times:
        if sizes and t == last:
            sizes[-1] += 1
        else:
            sizes.append(1)
        last = t
    return sizes


def step_figures(summary: ThroughputSummary, requests: Sequence[BenchRequestRow]) -> StepFigures:
    """Tokens per engine step per request (module docstring), with the counters' figure beside it."""
    valid = [w for w in summary.windows if w.valid]
    sp = summary.spec
    k = None
    if sp is not None and sp.drafts > 0:
        per = sp.draft_tokens / sp.drafts
        k = round(per) if abs(per - round(per)) < 1e-9 and round(per) >= 1 else None
    ceiling = k + 1 if k is not None else None
    rates, dec_tokens, dec_steps, at, over = [], 0, 0, 0, 0
    for r in requests:
        if r.phase != "timed" or not any(w.start <= r.started_at < w.end for w in valid):
            continue
        if r.ended != "done":  # a request cut at the run's end stops at an arbitrary step: it says nothing
            continue
        sizes = chunk_sizes(r)
        if len(sizes) < 2:
            continue
        decode = sizes[1:]
        rates.append(sum(decode) / len(decode))
        dec_tokens += sum(decode)
        dec_steps += len(decode)
        if ceiling is not None:
            over += sum(n > ceiling for n in sizes)
            at += all(n == ceiling for n in decode[:-1]) and decode[-1] <= ceiling
    overall = dec_tokens / dec_steps if dec_steps else None
    counters = sp.mean_acceptance_length if sp is not None else None
    return StepFigures(
        requests=len(rates), draft_tokens_per_step=k, ceiling=ceiling,
        per_request_mean=math.fsum(rates) / len(rates) if rates else None, per_request_min=min(rates, default=None),
        per_request_max=max(rates, default=None), overall=overall,
        at_ceiling=at if ceiling is not None else None, over_ceiling_chunks=over if ceiling is not None else None,
        counters_tokens_per_step=counters, overall_over_counters=_ratio(overall, counters))


def _bundled_tokens(r: BenchRequestRow) -> int:
    """Tokens that shared their arrival time with another token of the same request."""
    n, i, times = 0, 0, r.token_times
    while i < len(times):
        j = i
        while j + 1 < len(times) and times[j + 1] == times[i]:
            j += 1
        if j > i:
            n += j - i + 1
        i = j + 1
    return n


# --------------------------------------------------------------------------- comparing two arms


class WindowPair(FiguresDoc):
    """Window k of arm A against window k of arm B."""

    window: int
    """Window index."""
    a_tok_s: float
    """A's tok/s in the window."""
    b_tok_s: float
    """B's tok/s in the window."""
    ratio: float
    """a_tok_s / b_tok_s."""


class Comparison(FiguresDoc):
    """`audit bench compare A B`: A's tok/s over B's, paired by window."""

    schema_version: int = 1
    """Version of this comparison format."""
    a: str
    """A's package id."""
    b: str
    """B's package id."""
    a_arm: str
    """A's arm."""
    b_arm: str
    """B's arm."""
    pairs: list[WindowPair]
    """Window pairs where both windows are valid."""
    skipped: list[str]
    """Window pairs left out, with the reason."""
    ratio_mean: float | None = None
    """Mean of the paired ratios."""
    ratio_se: float | None = None
    """Standard error of that mean (sd of the paired ratios / sqrt(pairs)); null below two pairs."""
    ratio_min: float | None = None
    """Worst pair."""
    ratio_max: float | None = None
    """Best pair."""
    decode_ratio: float | None = None
    """A's mean per-request decode rate / B's."""
    ttft_ratio: float | None = None
    """A's median TTFT / B's."""
    notes: list[str]
    """Differences in how the two runs were made (prompt length, cap, concurrency, ...)."""


def compare(a_id: str, a: ThroughputSummary, a_cfg: dict[str, Any], b_id: str, b: ThroughputSummary,
            b_cfg: dict[str, Any]) -> Comparison:
    pairs, skipped = [], []
    n = max(len(a.windows), len(b.windows))
    for k in range(n):
        wa = a.windows[k] if k < len(a.windows) else None
        wb = b.windows[k] if k < len(b.windows) else None
        if wa is None or wb is None:
            skipped.append(f"window {k}: only in {'B' if wa is None else 'A'}")
        elif not wa.valid or not wb.valid:
            bad = [f"{name} invalid ({w.invalid_reason})" for name, w in (("A", wa), ("B", wb)) if not w.valid]
            skipped.append(f"window {k}: {'; '.join(bad)}")
        elif wb.tok_s == 0:
            skipped.append(f"window {k}: B generated no token")
        else:
            pairs.append(WindowPair(window=k, a_tok_s=wa.tok_s, b_tok_s=wb.tok_s, ratio=wa.tok_s / wb.tok_s))
    ratios = spread([p.ratio for p in pairs])
    notes = []
    for key, label in (("prompt_tokens", "prompt tokens"), ("max_tokens", "output cap"),
                       ("ignore_eos", "ignore_eos"), ("concurrency", "requests in flight"),
                       ("window_s", "window length (s)"), ("model", "model")):
        if a_cfg.get(key) != b_cfg.get(key):
            notes.append(f"{label} differ: A {a_cfg.get(key)}, B {b_cfg.get(key)}")
    return Comparison(
        a=a_id, b=b_id, a_arm=a.arm, b_arm=b.arm, pairs=pairs, skipped=skipped,
        ratio_mean=ratios.mean, ratio_se=ratios.se, ratio_min=ratios.min, ratio_max=ratios.max,
        decode_ratio=_ratio(a.decode.per_request_mean, b.decode.per_request_mean),
        ttft_ratio=_ratio(a.ttft.median_ms, b.ttft.median_ms), notes=notes)


schemas.register("throughput_summary.v1", ThroughputSummary)
schemas.register("bench_comparison.v1", Comparison)

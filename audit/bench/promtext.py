"""The server's Prometheus counters (`GET /metrics`) that a throughput run records per window.

vLLM v0.26.0 (`vllm/v1/spec_decode/metrics.py: SpecDecodingProm`, `vllm/v1/metrics/loggers.py`)
registers prometheus_client Counters named `vllm:spec_decode_num_drafts`,
`vllm:spec_decode_num_draft_tokens`, `vllm:spec_decode_num_accepted_tokens`,
`vllm:spec_decode_num_accepted_tokens_per_pos` (label `position`), `vllm:generation_tokens` and
`vllm:prompt_tokens`; the text exposition adds `_total` to each counter and labels them by
`model_name` and `engine`. The spec-decode counters exist only when the server runs speculative
decoding. Mean acceptance length, as vLLM defines it (bonus token included), is
1 + accepted tokens / drafts.
"""

from __future__ import annotations

import math
import re

SPEC_DRAFTS = "vllm:spec_decode_num_drafts_total"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
SPEC_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
GENERATION_TOKENS = "vllm:generation_tokens_total"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
PREEMPTIONS = "vllm:num_preemptions_total"

KEPT = (SPEC_DRAFTS, SPEC_DRAFT_TOKENS, SPEC_ACCEPTED, GENERATION_TOKENS, PROMPT_TOKENS, PREEMPTIONS)
"""Counters kept (summed over label sets); per-position acceptance is kept as `NAME{position=P}`."""

MAX_POSITIONS = 32
"""Per-position acceptance counters kept (positions 0..31: far past any k a server drafts)."""

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_POSITION = re.compile(r'position="(\d+)"')


def parse_counters(text: str) -> dict[str, float]:
    """The kept counters of a Prometheus text exposition, each summed over its label sets."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        name, labels, raw = m.groups()
        if name == SPEC_PER_POS:
            pos = _POSITION.search(labels or "")
            if not pos or len(pos.group(1)) > 3 or int(pos.group(1)) >= MAX_POSITIONS:
                continue
            key = f"{name}{{position={pos.group(1)}}}"
        elif name in KEPT:
            key = name
        else:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if math.isfinite(value):
            out[key] = out.get(key, 0.0) + value
    return out


def add_counters(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """Counters of several servers, summed name by name."""
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0.0) + v
    return out


def inconsistency(a: dict[str, float], b: dict[str, float]) -> str | None:
    """Why counters read at two edges cannot both be true, or None: a counter that went down, more draft
    tokens accepted than drafted, fewer draft tokens than drafts."""
    for name in sorted(a.keys() & b.keys()):
        if b[name] < a[name]:
            return f"{name} went down from {a[name]:g} to {b[name]:g}"

    def d(name: str) -> float:
        return b.get(name, 0.0) - a.get(name, 0.0)

    if d(SPEC_ACCEPTED) > d(SPEC_DRAFT_TOKENS):
        return f"{d(SPEC_ACCEPTED):g} draft tokens accepted of {d(SPEC_DRAFT_TOKENS):g} drafted"
    if d(SPEC_DRAFT_TOKENS) < d(SPEC_DRAFTS):
        return f"{d(SPEC_DRAFT_TOKENS):g} draft tokens in {d(SPEC_DRAFTS):g} drafts"
    return None

"""Issue 19, `audit bench`: every number a server claims is checked against what was asked and what
arrived, and every request (warm-up and anchor included) is bounded in time and bytes."""

from __future__ import annotations

import sys
import time
import tracemalloc

import pytest
from tests.attacks import attack
from tests.fake_openai_server import FakeOpenAIServer

from audit.bench import promtext, throughput
from audit.bench.client import request_body, stream_completion
from audit.bench.clock import RunClock
from audit.bench.prompt import PromptBuilder, PromptSpec
from audit.bench.throughput import BenchConfig, fetch_counters, run
from audit.errors import AuditError
from audit.generate.openai_http import OpenAIServer, ServerError


def _stream(srv, max_tokens=16):
    body = request_body("fake-model", "#00001 the the", max_tokens, True)
    return stream_completion(OpenAIServer(srv.url, timeout=5), body, RunClock(), cut_at=None, stall_s=5)


def _cfg(srv, **kw):
    base = dict(arm="x", servers=(srv.url,), prompt_tokens=24, max_tokens=8, ignore_eos=True, windows=1,
                window_s=0.5, telemetry=False, warmup_requests=1)
    base.update(kw)
    return BenchConfig(**base)


@attack("bench.claimed-tokens")
def test_a_chunk_claiming_a_billion_tokens_is_an_error_not_8_gb():
    tracemalloc.start()
    try:
        with FakeOpenAIServer(claim_tokens=10**9) as srv:
            out = _stream(srv, max_tokens=16)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.ended == "error" and "1000000000 completion tokens" in out.error and "max_tokens 16" in out.error
    assert len(out.token_times) == 0 and peak < 50_000_000


@attack("bench.claimed-tokens")
def test_a_claim_just_past_max_tokens_is_refused_too():
    with FakeOpenAIServer(claim_tokens=17) as srv:
        out = _stream(srv, max_tokens=16)
    assert out.ended == "error" and "17 completion tokens" in out.error


@pytest.mark.slow
@attack("bench.endless-warmup")
def test_an_endless_warm_up_stream_ends_the_run_at_the_request_timeout(tmp_path):
    with FakeOpenAIServer(endless=True) as srv:
        t0 = time.monotonic()
        with pytest.raises(AuditError, match=r"warm-up request 0 did not finish within 1 s"):
            run(_cfg(srv, request_timeout_s=1.0), work_parent=tmp_path)
        assert time.monotonic() - t0 < 20
    assert not list(tmp_path.iterdir())  # nothing half-written


@attack("bench.endless-timed")
def test_an_endless_timed_stream_is_cut_at_the_last_window(tmp_path):
    with FakeOpenAIServer(endless=True) as srv:
        t0 = time.monotonic()
        res = run(_cfg(srv, warmup_requests=0), work_parent=tmp_path)
        assert time.monotonic() - t0 < 20
    assert [r.ended for r in res.rows] == ["cut"] and res.rows[0].output_tokens == 0


@attack("bench.tokenize-claims")
def test_counts_that_fall_as_the_prompt_grows_cannot_make_a_huge_prompt():
    longest = []

    def count(text: str) -> int:  # 19 tokens, then 9 for a prompt twice as long: 1e-9 tokens per word
        longest.append(len(text))
        return 10_000 // max(1, len(text) // 4)

    with pytest.raises(AuditError, match="the server's /tokenize counts"):
        PromptBuilder(PromptSpec(tokens=512), count).build(0)
    assert max(longest) < 200_000


@attack("bench.tokenize-claims")
def test_a_server_counting_no_tokens_at_all_is_refused(tmp_path):
    with FakeOpenAIServer(tokenize_count=0) as srv, pytest.raises(AuditError, match="tokens"):
        run(_cfg(srv), work_parent=tmp_path)


@attack("bench.metrics-bloat")
def test_a_metrics_page_over_the_byte_limit_is_an_error(monkeypatch):
    monkeypatch.setattr(throughput, "MAX_METRICS_BYTES", 100_000)
    with FakeOpenAIServer(metrics_text="# " + "x" * 200_000 + "\n") as srv:
        with pytest.raises(ServerError, match="more than 100,000 bytes"):
            fetch_counters(srv.url)


@attack("bench.metrics-positions")
def test_per_position_counters_are_bounded():
    text = "".join(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{p}"}} 1.0\n'
                   for p in range(10_000))
    out = promtext.parse_counters(text)
    assert len(out) == promtext.MAX_POSITIONS


@attack("bench.counters-inconsistent")
def test_counters_that_fall_or_accept_more_than_drafted_are_not_figures():
    a = {promtext.SPEC_DRAFTS: 10.0, promtext.SPEC_DRAFT_TOKENS: 30.0, promtext.SPEC_ACCEPTED: 5.0}
    assert promtext.inconsistency(a, {**a, promtext.SPEC_DRAFTS: 11.0, promtext.SPEC_DRAFT_TOKENS: 33.0}) is None
    assert "went down" in promtext.inconsistency(a, {**a, promtext.SPEC_ACCEPTED: 4.0})
    more = {promtext.SPEC_DRAFTS: 11.0, promtext.SPEC_DRAFT_TOKENS: 33.0, promtext.SPEC_ACCEPTED: 9.0}
    assert "accepted" in promtext.inconsistency(a, more)


@attack("bench.counters-inconsistent")
def test_a_run_records_inconsistent_counters_as_the_windows_error(tmp_path, monkeypatch):
    reads = iter([{promtext.SPEC_ACCEPTED: 100.0}, {promtext.SPEC_ACCEPTED: 1.0}] * 5)
    monkeypatch.setattr(throughput, "fetch_counters", lambda url, timeout=5.0: next(reads))
    with FakeOpenAIServer(token_delay=0.001) as srv:
        res = run(_cfg(srv, warmup_requests=0), work_parent=tmp_path)
    w = res.windows[0]
    assert w.server_counters_start is None and w.server_counters_end is None
    assert "went down" in w.counters_error


@attack("bench.server-strings")
def test_a_megabyte_version_string_is_refused(tmp_path):
    with FakeOpenAIServer(version="v" * 1_000_000) as srv, pytest.raises(AuditError, match="version"):
        run(_cfg(srv), work_parent=tmp_path)


@pytest.mark.slow
@attack("bench.anchor-log-flood")
def test_an_anchor_printing_forever_is_cut_and_its_log_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(throughput, "MAX_ANCHOR_LOG_BYTES", 200_000)
    flood = f"{sys.executable} -c \"import sys\nwhile True: sys.stdout.write('x' * 4096)\""
    with FakeOpenAIServer(token_delay=0.001) as srv:
        res = run(_cfg(srv, warmup_requests=0, anchor=flood, anchor_timeout=1.5), work_parent=tmp_path)
    assert res.anchor["exit_code"] is None and res.anchor_log.stat().st_size <= 200_000 + 200
    assert "more output left out" in res.anchor_log.read_text()[-200:]


# --------------------------------------------------------------------------- round 4 (issue 28), class 3


@attack("bench.no-token-stream")
@pytest.mark.parametrize("hostile", ["endless", "endless_comments"])
def test_a_stream_that_never_sends_a_token_but_never_goes_silent_is_cut_at_the_progress_deadline(hostile):
    import threading

    # Empty-text deltas with 0 completion tokens, or SSE comment lines: the socket never went silent, so the
    # read timeout never fired, and a warm-up request (no window to cut at) waited for ever.
    got = []
    with FakeOpenAIServer(**{hostile: True}) as srv:
        body = request_body("fake-model", "#00001 the the", 16, True)
        t = threading.Thread(target=lambda: got.append(stream_completion(
            OpenAIServer(srv.url, timeout=5), body, RunClock(), cut_at=None, stall_s=1.0)), daemon=True)
        t0 = time.monotonic()
        t.start()
        t.join(15)
        assert not t.is_alive(), "the stream was read for ever"
    assert time.monotonic() - t0 < 5
    (out,) = got
    assert out.ended == "error" and out.error.startswith("stalled: POST /v1/completions: no token for 1.")
    assert "progress deadline 1 s" in out.error and out.token_times == []

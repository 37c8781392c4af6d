"""Per-request acceptance read from the stream (`figures.step_figures`): tokens per engine step, the
ceiling k + 1, requests at it and the cross-check against the server's spec-decode counters."""

from __future__ import annotations

import pytest
from tests.bench_helpers import synthetic_run
from tests.fake_nvml import FakeLayer
from tests.fake_openai_server import FakeOpenAIServer

from audit.bench import figures, store
from audit.bench.report import throughput_lines
from audit.bench.throughput import BenchConfig, run
from audit.bench.rows import BenchRequestRow


def _row(n: int, times: list[float], phase: str = "timed", start: float = 0.0) -> BenchRequestRow:
    return BenchRequestRow(request=n, phase=phase, prompt_index=n, started_at=start, first_token_at=start + times[0],
                           finished_at=start + times[-1] + 0.001, prompt_tokens=8, output_tokens=len(times),
                           max_tokens=len(times), token_times=times, chunks=len(set(times)),
                           bundled_chunks=sum(times.count(t) > 1 for t in set(times)), finish_reason="length",
                           ended="done")


def test_chunk_sizes_group_tokens_by_arrival_time():
    assert figures.chunk_sizes(_row(0, [0.1, 0.2, 0.2, 0.2, 0.3, 0.3])) == [1, 3, 2]
    assert figures.chunk_sizes(_row(0, [0.1])) == [1]


def test_requests_at_the_ceiling_and_the_counters_beside_them():
    res = synthetic_run("s", bundle=4, spec=(3, 3), tokens=9)  # chunks of 4, 4, 1 tokens
    s = figures.summarize("s", res.rows, res.windows, res.config.stall_s)
    st = figures.step_figures(s, res.rows)
    assert st.draft_tokens_per_step == 3 and st.ceiling == 4
    # bundle=4 puts tokens 0-3 in the first chunk: the "prefill" chunk carries 4 here, decode chunks 4 and 1
    assert st.requests > 0 and st.over_ceiling_chunks == 0
    assert st.at_ceiling == st.requests  # every decode chunk but the last carries 4
    assert 2.5 <= st.overall <= 4.0  # 4, 1 per request


def test_a_request_cut_at_the_runs_end_is_left_out():
    # 1 | 4, 4 and then cut: its steps look like the ceiling only because the run stopped it
    cut = _row(1, [0.1] + [0.2] * 4 + [0.3] * 4).model_copy(update={"ended": "cut"})
    done = _row(0, [0.1, 0.2, 0.2, 0.2, 0.2, 0.3, 0.3, 0.4])
    summary = figures.ThroughputSummary.model_construct(
        windows=[figures.WindowFigures.model_construct(start=-1.0, end=10.0, valid=True)],
        spec=figures.SpecFigures(drafts=10, draft_tokens=30, accepted_tokens=15, mean_acceptance_length=2.5))
    st = figures.step_figures(summary, [done, cut])
    assert (st.requests, st.at_ceiling) == (1, 0)


def test_a_request_below_the_ceiling_and_a_merged_chunk_are_counted():
    rows = [_row(0, [0.1, 0.2, 0.2, 0.2, 0.2, 0.3, 0.3, 0.4]),   # decode 4, 2, 1: not at the ceiling
            _row(1, [0.1, 0.2, 0.2, 0.2, 0.2, 0.3, 0.3, 0.3, 0.3, 0.4]),  # 4, 4, 1: at it (the last may be short)
            _row(2, [0.1] + [0.2] * 6)]                           # 6 tokens in one chunk: steps were merged
    summary = figures.ThroughputSummary.model_construct(
        windows=[figures.WindowFigures.model_construct(start=-1.0, end=10.0, valid=True)],
        spec=figures.SpecFigures(drafts=10, draft_tokens=30, accepted_tokens=15, mean_acceptance_length=2.5))
    st = figures.step_figures(summary, rows)
    assert (st.ceiling, st.at_ceiling, st.over_ceiling_chunks, st.requests) == (4, 1, 1, 3)
    assert st.overall == pytest.approx((7 + 9 + 6) / (3 + 3 + 1))
    assert st.per_request_min == pytest.approx(7 / 3) and st.per_request_max == 6
    assert st.overall_over_counters == pytest.approx(st.overall / 2.5)


def test_without_spec_counters_the_ceiling_is_unknown():
    res = synthetic_run("plain", tokens=6)
    s = figures.summarize("plain", res.rows, res.windows, res.config.stall_s)
    st = figures.step_figures(s, res.rows)
    assert st.ceiling is None and st.at_ceiling is None and st.overall == 1.0


@pytest.mark.slow
def test_a_run_against_the_fake_server_agrees_with_its_counters(tmp_path):
    with FakeOpenAIServer(max_model_len=4096, token_delay=0.002, bundle=[1, 4, 4, 2], spec_k=3) as srv:
        cfg = BenchConfig(arm="mtp", servers=(srv.url,), prompt_tokens=48, max_tokens=22, ignore_eos=True,
                          windows=2, window_s=0.8, sample_hz=20, gpm_interval_s=0.1)
        res = run(cfg, layer=FakeLayer(["NVIDIA H200"]), work_parent=tmp_path)
        store.write(res, tmp_path / "mtp", tmp_path / "mtp.telemetry")
    t = store.open_throughput(tmp_path / "mtp")
    try:
        st = figures.step_figures(t.summary, t.requests)
        # chunks 1 | 4, 4, 2, 1, 4, 4, 2: tokens per decode step 21 / 7 = 3
        assert st.ceiling == 4 and st.over_ceiling_chunks == 0
        assert st.overall == pytest.approx(3.0, rel=0.05)
        assert st.at_ceiling == 0  # every request has a chunk of 2 before its last
        assert st.overall_over_counters == pytest.approx(1.0, rel=0.05)
        text = "\n".join(throughput_lines(t))
        assert "engine steps from the stream" in text and "ceiling of 4 tokens per step" in text
    finally:
        t.close()

"""`audit bench` as a library: figures by their definitions, recomputation, telemetry under failures,
the prompt builder and the token-timing client (against tests/fake_openai_server.py)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from tests.bench_helpers import T0, synthetic_run, write_run
from tests.fake_nvml import FakeLayer
from tests.fake_openai_server import FakeOpenAIServer

from audit.bench import figures, promtext, store
from audit.bench.client import NoChunkUsage, request_body, stream_completion
from audit.bench.clock import RunClock
from audit.bench.prompt import PromptBuilder, PromptSpec
from audit.generate.openai_http import OpenAIServer
from audit.bench.telemetry import NvmlLayer, Sampler
from audit.bench.throughput import BenchConfig, run
from audit.errors import AuditError, ValidationFailed
from audit.fileio import dumps_pretty, sha256_file
from audit.bench.rows import GpuSampleRow
from audit.packages import validate_package

# --------------------------------------------------------------------------- figures


def _brute_tokens(result, start: float, end: float) -> int:
    return sum(1 for r in result.rows if r.phase == "timed" for o in r.token_times if start <= r.started_at + o < end)


def test_window_tokens_are_the_arrivals_inside_it_straddlers_split():
    res = synthetic_run(interval=0.01, tokens=8, window_s=0.5)
    s = figures.summarize("a", res.rows, res.windows, res.config.stall_s)
    straddlers = [r for r in res.rows if r.phase == "timed" and any(
        r.started_at < w.end <= r.started_at + r.token_times[-1] for w in res.windows[:-1])]
    assert straddlers, "the run must have requests across a window edge"
    for w, f in zip(res.windows, s.windows):
        assert f.tokens == _brute_tokens(res, w.start, w.end)
        assert f.tok_s == f.tokens / (w.end - w.start)
        assert f.valid and f.invalid_reason is None
    assert s.tok_s.n == 3 and s.tok_s.mean == math.fsum(f.tok_s for f in s.windows) / 3
    # Each request: 8 tokens in 0.121 s; TTFT is inside the window time.
    assert s.tok_s.mean == pytest.approx(8 / 0.121, rel=0.05)  # within the quantization of 0.5 s windows


def test_decode_rate_and_ttft_by_definition():
    res = synthetic_run(interval=0.01, tokens=8, ttft=0.05)
    s = figures.summarize("a", res.rows, res.windows, res.config.stall_s)
    done = [r for r in res.rows if r.phase == "timed" and r.ended == "done"]
    assert s.decode.per_request_min == pytest.approx(100.0) and s.decode.per_request_max == pytest.approx(100.0)
    assert s.decode.tokens == sum(r.output_tokens - 1 for r in res.rows if r.phase == "timed" and r.output_tokens > 1)
    assert s.decode.overall_tok_s == pytest.approx(100.0)
    assert s.ttft.median_ms == pytest.approx(50.0) and s.ttft.requests == len(done) + 1  # and the cut one
    assert s.requests.warmup == 1 and s.requests.cut == 1 and s.requests.error == 0


def test_bundled_chunks_count_every_token():
    res = synthetic_run(interval=0.02, tokens=9, bundle=3)
    s = figures.summarize("a", res.rows, res.windows, res.config.stall_s)
    timed = [r for r in res.rows if r.phase == "timed"]
    assert s.chunks.bundled == sum(r.bundled_chunks for r in timed) > 0
    assert s.chunks.tokens_in_bundled == sum(r.output_tokens for r in timed)
    assert sum(f.tokens for f in s.windows) == _brute_tokens(res, res.windows[0].start, res.windows[-1].end)
    # 8 decode tokens over 2 intervals of 0.02 s: bundles make the per-request rate 200 tok/s.
    assert s.decode.per_request_max == pytest.approx(200.0)


def test_a_stall_makes_its_window_invalid_and_leaves_the_averages():
    res = synthetic_run(window_s=2.0, stall_s=1.0, gap=(2.5, 1.5))
    s = figures.summarize("a", res.rows, res.windows, res.config.stall_s)
    w1 = s.windows[1]
    assert not w1.valid
    assert w1.invalid_reason.startswith("no token arrived for 1.5 s from +0.5 s (stall threshold 1 s)")
    assert [w.valid for w in s.windows] == [True, False, True]
    assert s.tok_s.n == 2 and s.tok_s.mean == pytest.approx((s.windows[0].tok_s + s.windows[2].tok_s) / 2)
    in_w1 = [r for r in res.rows if r.phase == "timed" and w1.start <= r.started_at < w1.end]
    assert s.ttft.requests == sum(r.first_token_at is not None for r in res.rows if r.phase == "timed") - len(in_w1)


def test_a_failed_request_makes_its_window_invalid():
    res = synthetic_run(error_at=4.5)
    s = figures.summarize("a", res.rows, res.windows, res.config.stall_s)
    assert [w.valid for w in s.windows] == [True, True, False]
    bad = next(r for r in res.rows if r.ended == "error")
    assert s.windows[2].invalid_reason == (f"request {bad.request} failed at +{bad.finished_at - T0 - 4:.1f} s: "
                                           "POST /v1/completions: HTTP 500: injected")
    assert s.requests.error == 1


def test_speculative_decoding_per_window_from_the_server_counters():
    res = synthetic_run(spec=(3, 1))
    s = figures.summarize("a", res.rows, res.windows, res.config.stall_s)
    w = s.windows[0]
    assert w.spec_draft_tokens == 3 * w.spec_drafts and w.spec_accepted_tokens == w.spec_drafts
    assert w.spec_acceptance_rate == pytest.approx(1 / 3) and w.spec_mean_acceptance_length == 2.0
    assert s.spec.mean_acceptance_length == 2.0 and s.spec.drafts == sum(f.spec_drafts for f in s.windows)
    assert figures.summarize("a", synthetic_run().rows, res.windows[:0], 1.0).spec is None
    assert figures.summarize("a", res.rows, synthetic_run().windows, 1.0).spec is None  # no spec counters
    idle = [w.model_copy(update={"server_counters_start": {promtext.SPEC_DRAFTS: 7.0},
                                 "server_counters_end": {promtext.SPEC_DRAFTS: 7.0}}) for w in res.windows]
    nothing = figures.summarize("a", res.rows, idle, 1.0).spec  # spec decoding on, but nothing drafted
    assert nothing.drafts == 0 and nothing.mean_acceptance_length is None


def test_prometheus_counters_are_summed_over_labels():
    text = "\n".join([
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0',
        'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 5.0',
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 3.0',
        'vllm:spec_decode_num_drafts_created 1.7e9',
        'vllm:generation_tokens_total{model_name="m"} NaN',
        'vllm:num_requests_running{model_name="m"} 1.0',
        "garbage line"])
    assert promtext.parse_counters(text) == {promtext.SPEC_DRAFTS: 15.0,
                                             f"{promtext.SPEC_PER_POS}{{position=1}}": 3.0}


# --------------------------------------------------------------------------- packages


def _rehash(pkg: Path, rel: str) -> None:
    """What an attacker does after editing a file: fix the manifest's hash and size."""
    m = json.loads((pkg / "manifest.json").read_text())
    digest, size = sha256_file(pkg / rel)
    for f in m["files"]:
        if f["path"] == rel:
            f["sha256"], f["bytes"] = digest, size
    (pkg / "manifest.json").write_text(dumps_pretty(m))


def test_stored_summaries_equal_the_recomputed_ones(tmp_path):
    out, tel = write_run(tmp_path, "a", synthetic_run(gpus=2))
    assert validate_package(out) == [] and validate_package(tel) == []
    with store.open_throughput(out) as t, store.open_telemetry(tel, t) as tt:
        assert t.stored == t.summary.model_dump(mode="json")
        assert tt.stored == tt.summary.model_dump(mode="json")
        assert tt.extra["throughput"] == {"package_id": t.pkg.manifest.package_id, "digest": t.pkg.digest}


def test_a_with_block_closes_what_it_read_back(tmp_path):
    """A bundled package is read from a temporary folder: the end of the `with` block removes it."""
    from audit.packages import bundle

    out, tel = write_run(tmp_path, "a", synthetic_run())
    bundle(out, tmp_path / "a.tar.gz")
    bundle(tel, tmp_path / "a.telemetry.tar.gz")
    with store.open_throughput(tmp_path / "a.tar.gz") as t, \
            store.open_telemetry(tmp_path / "a.telemetry.tar.gz", t) as tt:
        roots = [t.pkg.root, tt.pkg.root]
        assert all(r.is_dir() and tmp_path not in r.parents for r in roots)
    assert not any(r.exists() for r in roots)


def test_an_edited_summary_is_refused_even_with_a_fixed_manifest(tmp_path):
    out, _ = write_run(tmp_path, "a", synthetic_run())
    s = json.loads((out / "summary.json").read_text())
    s["tok_s"]["mean"] *= 2  # the published figure, doubled
    (out / "summary.json").write_text(dumps_pretty(s))
    _rehash(out, "summary.json")
    with pytest.raises(ValidationFailed) as e:
        store.open_throughput(out)
    assert "tok_s.mean: stored" in str(e.value)


def test_edited_rows_are_refused_even_with_a_fixed_manifest(tmp_path):
    out, _ = write_run(tmp_path, "a", synthetic_run())
    lines = (out / "requests.jsonl").read_text().splitlines()
    row = json.loads(lines[5])
    row["token_times"] = [x / 2 for x in row["token_times"]]  # faster tokens, same count
    row["first_token_at"] = round(row["started_at"] + row["token_times"][0], 6)
    lines[5] = json.dumps(row)
    (out / "requests.jsonl").write_text("\n".join(lines) + "\n")
    _rehash(out, "requests.jsonl")
    with pytest.raises(ValidationFailed) as e:
        store.open_throughput(out)
    assert "differs from the figures recomputed from the rows" in str(e.value)


def test_telemetry_of_another_run_is_refused(tmp_path):
    a, _ = write_run(tmp_path, "a", synthetic_run("a"))
    _, tel_b = write_run(tmp_path, "b", synthetic_run("b", interval=0.02))
    t = store.open_throughput(a)
    try:
        with pytest.raises(AuditError, match="belongs to throughput package throughput-b-"):
            store.open_telemetry(tel_b, t)
    finally:
        t.close()


def test_telemetry_figures_per_window(tmp_path):
    _, tel = write_run(tmp_path, "a", synthetic_run(gpus=2, window_s=2.0))
    tt = store.open_telemetry(tel)
    try:
        w = tt.summary.windows[1]
        g0, g1 = w.gpus
        assert g0.samples == 4 and g0.kernel_running_pct == 99.0 and g1.memory_busy_pct == 41.0
        assert g0.energy_j == pytest.approx(800.0)  # the counter climbs 400 J/s, interpolated at the edges
        assert w.energy_j_sum_over_gpus == pytest.approx(1600.0) and w.power_w_sum_over_gpus == 810.0
        assert g0.sm_util_pct == pytest.approx(40.5)  # 40 and 41 alternating, weighted by overlap
        assert g0.sm_occupancy_pct is None and g0.temperature_c is None  # unsupported: null, not zero
        assert w.mean_dram_bw_util_pct == 70.0
    finally:
        tt.close()


def test_all_null_columns_and_empty_files_keep_their_types(tmp_path):
    import pyarrow.parquet as pq

    res = synthetic_run()
    for r in res.telemetry.gpu_rows:
        r["sm_clock_mhz"] = None
    res.telemetry.gpm_rows = []
    _, tel = write_run(tmp_path, "a", res)
    assert validate_package(tel) == []
    schema = pq.read_schema(tel / "gpu_samples.parquet")
    assert str(schema.field("sm_clock_mhz").type) == "int64"
    assert pq.read_table(tel / "gpm_samples.parquet").num_rows == 0


def test_compare_pairs_windows_and_skips_invalid_ones():
    a = figures.summarize("fast", *_rows(synthetic_run(interval=0.01)), 1.0)
    b_run = synthetic_run(interval=0.02, gap=(0.5, 1.2))
    b = figures.summarize("slow", *_rows(b_run), 1.0)
    c = figures.compare("A", a, {"prompt_tokens": 64}, "B", b, {"prompt_tokens": 128})
    assert [p.window for p in c.pairs] == [1, 2]
    assert c.skipped == [f"window 0: B invalid ({b.windows[0].invalid_reason})"]
    ratios = [a.windows[k].tok_s / b.windows[k].tok_s for k in (1, 2)]
    assert c.ratio_mean == pytest.approx(sum(ratios) / 2) and c.ratio_min == min(ratios) and c.ratio_max == max(ratios)
    assert c.ratio_se == pytest.approx(abs(ratios[0] - ratios[1]) / 2)
    assert c.notes == ["prompt tokens differ: A 64, B 128"]


def _rows(res):
    return res.rows, res.windows


# --------------------------------------------------------------------------- telemetry sampler


def _sample(layer, seconds=0.6, **kw):
    s = Sampler(layer, RunClock(), hz=kw.pop("hz", 20.0), gpm_interval_s=kw.pop("gpm_interval_s", 0.1), **kw).start()
    time.sleep(seconds)
    return s.stop()


def test_no_nvml_is_recorded_not_fatal():
    res = _sample(FakeLayer(unavailable="NVML Shared Library Not Found"), seconds=0.05)
    assert res.status == "unavailable: NVML Shared Library Not Found"
    assert res.devices == [] and res.gpu_rows == [] and res.gpm_rows == []


def test_the_real_layer_says_why_it_has_no_counters():
    res = _sample(NvmlLayer(), seconds=0.2)
    if res.devices:  # a machine with a GPU: the real counters came
        assert res.status == "ok" and res.gpu_rows
    else:
        assert res.status.startswith("unavailable: ")


def test_unsupported_counters_are_null_and_a_lost_gpu_is_an_event():
    layer = FakeLayer(["NVIDIA H200", "NVIDIA H200"], unsupported=["sm_clock_mhz", "dram_bw_util_pct"], lose={1: 3})
    res = _sample(layer, seconds=0.7)
    assert res.status == "ok" and layer.closed
    assert res.counters["0"]["sm_clock_mhz"] == "unsupported" and res.counters["0"]["dram_bw_util_pct"] == "unsupported"
    assert all(r.get("sm_clock_mhz") is None for r in res.gpu_rows)
    assert all(r.get("dram_bw_util_pct") is None for r in res.gpm_rows) and any(r.get("sm_util_pct") for r in res.gpm_rows)
    lost = [r for r in res.gpu_rows if r["gpu"] == 1 and r.get("error")]
    assert len(lost) == 1 and lost[0]["error"].startswith("GPU lost")
    assert max(r["t"] for r in res.gpu_rows if r["gpu"] == 1) == lost[0]["t"]
    assert max(r["t"] for r in res.gpu_rows if r["gpu"] == 0) > lost[0]["t"]  # the other GPU goes on
    assert [e["gpu"] for e in res.events] == [1] and "GPU lost" in res.events[0]["event"]
    for r in res.gpu_rows:
        GpuSampleRow(**r)


def test_a_failed_reading_is_an_error_not_a_zero():
    res = _sample(FakeLayer(flaky={0: 2}), seconds=0.4)
    bad = [r for r in res.gpu_rows if r.get("error")]
    assert bad and all("kernel_running_pct" not in r and r["power_w"] == 300.0 for r in bad)
    assert "Unknown Error" in bad[0]["error"] and res.counters["0"]["kernel_running_pct"] == "ok"


def test_gpm_values_that_are_not_numbers_are_errors():
    res = _sample(FakeLayer(gpm_nan=True), seconds=0.4)
    assert res.gpm_rows and all(r.get("sm_util_pct") is None and "nan" in r["error"] for r in res.gpm_rows)
    assert all(r["t_end"] - r["t_start"] >= 0.1 for r in res.gpm_rows)


@pytest.mark.slow
def test_gpm_samples_that_keep_failing_are_given_up_on():
    res = _sample(FakeLayer(gpm_fail=True), seconds=1.4)  # 14 GPM ticks at 0.1 s
    assert res.gpm_rows == [] and res.gpu_rows
    assert [e["event"] for e in res.events] == ["GPM sample failed: Insufficient Permissions"] * 3 + [
        "GPM given up after 10 failed samples"]
    assert res.counters["0"]["sm_util_pct"] == "not read: 10 GPM samples failed (Insufficient Permissions)"


def test_the_energy_counter_is_read_once_a_second_and_at_each_mark():
    """On an H200 one energy read cost 3 ms of CPU: at 10 Hz that alone was 3% of a core."""
    layer = FakeLayer()
    s = Sampler(layer, RunClock(), hz=20.0, gpm_interval_s=0.1, energy_interval_s=1.0).start()
    time.sleep(0.55)
    s.mark()  # a window edge
    time.sleep(0.3)
    res = s.stop()
    with_energy = [r for r in res.gpu_rows if r.get("energy_j") is not None]
    # The first reading, the mark, and the last reading; never the other ticks of the 0.85 s. On a loaded
    # machine the two sleeps can outlast the 1 s interval: a read then falls due, but only 1 s after the last.
    assert len(res.gpu_rows) >= 10 and 3 <= len(with_energy) <= 3 + int(res.wall_s)
    assert with_energy[0] is res.gpu_rows[0] and with_energy[-1] is res.gpu_rows[-1]
    assert 0.5 <= with_energy[1]["t"] - with_energy[0]["t"] <= 0.7 or res.late_ticks
    mark_t = with_energy[1]["t"]
    for before, after in zip(with_energy[1:], with_energy[2:-1], strict=False):  # reads due by the clock alone
        assert after["t"] - before["t"] >= 0.95 and after["t"] > mark_t
    assert all(r.get("power_w") is not None for r in res.gpu_rows)


def test_gpm_intervals_below_100_ms_are_refused():
    with pytest.raises(ValueError, match="shorter than 0.1 s"):
        Sampler(FakeLayer(), RunClock(), gpm_interval_s=0.05)


# --------------------------------------------------------------------------- prompts


def test_prompt_builder_reaches_the_exact_count():
    def count(text: str) -> int:  # a BOS, 2 for the marker, 2 per filler word
        return 1 + 2 + 2 * (len(text.split()) - 1)

    b = PromptBuilder(PromptSpec(tokens=41, filler="lorem"), count)
    p = b.build(3)
    assert p.text.startswith("#00003 lorem") and count(p.text) == 41 and p.fillers == 19
    assert b.build(4).tokens == 41
    with pytest.raises(AuditError, match="cannot build a prompt of exactly 42 tokens .* counted 41 and 43"):
        PromptBuilder(PromptSpec(tokens=42, filler="lorem"), count).build(0)


# --------------------------------------------------------------------------- the client


def _stream(srv, *, max_tokens=12, ignore_eos=True, cut_at=None, prompt="#00001 the the the"):
    body = request_body("fake-model", prompt, max_tokens, ignore_eos)
    return stream_completion(OpenAIServer(srv.url, timeout=5), body, RunClock(), cut_at=cut_at, stall_s=5)


def test_bundled_chunks_are_counted_by_token():
    with FakeOpenAIServer(bundle=[1, 3, 2]) as srv:
        out = _stream(srv, max_tokens=12)
    assert out.ended == "done" and len(out.token_times) == 12 and out.finish_reason == "length"
    assert out.chunks == 6 and out.bundled_chunks == 4  # 1, 3, 2, 1, 3, 2
    assert out.token_times[1] == out.token_times[2] == out.token_times[3]


def test_time_to_first_token_is_by_token_not_by_chunk():
    with FakeOpenAIServer(empty_first_chunk=True, first_token_delay=0.3) as srv:
        out = _stream(srv)
    assert out.token_times[0] >= 0.3 and out.first_token_at - out.started_at >= 0.3


def test_the_end_of_sequence_token_counts():
    with FakeOpenAIServer(stop_prob=0.5) as srv:
        outs = [_stream(srv, ignore_eos=False, prompt=f"#{i:05d} the") for i in range(8)]
    stopped = [o for o in outs if o.finish_reason == "stop"]
    assert stopped and all(o.ended == "done" for o in outs)
    assert all(o.token_times[-1] >= o.token_times[0] for o in stopped)


def test_a_server_without_per_chunk_usage_is_refused():
    with FakeOpenAIServer(no_chunk_usage=True) as srv, pytest.raises(NoChunkUsage, match="per chunk"):
        _stream(srv)


def test_streams_are_closed_after_the_cut():
    with FakeOpenAIServer(token_delay=0.01) as srv:
        out = _stream(srv, max_tokens=200, cut_at=0.0)
    assert out.ended == "cut" and len(out.token_times) == 1 and out.finish_reason is None


# --------------------------------------------------------------------------- whole runs (fake server, fake GPUs)


@pytest.mark.slow
def test_a_run_with_bundles_spec_counters_and_a_lost_gpu(tmp_path):
    layer = FakeLayer(["NVIDIA H200", "NVIDIA H200"], lose={1: 4})
    with FakeOpenAIServer(max_model_len=4096, token_delay=0.002, bundle=[1, 3], spec_k=3) as srv:
        cfg = BenchConfig(arm="spec", servers=(srv.url,), prompt_tokens=48, max_tokens=16, ignore_eos=True,
                          windows=2, window_s=0.6, sample_hz=20, gpm_interval_s=0.1)
        res = run(cfg, layer=layer, work_parent=tmp_path)
        store.write(res, tmp_path / "spec", tmp_path / "spec.telemetry")
    t = store.open_throughput(tmp_path / "spec")
    tel = store.open_telemetry(tmp_path / "spec.telemetry", t)
    try:
        s = t.summary
        assert all(w.valid for w in s.windows) and s.tok_s.n == 2
        assert all(r.prompt_tokens == 48 for r in t.requests if r.ended == "done")
        assert s.chunks.bundled > 0 and s.spec is not None
        # Chunks of 1, 3, 1, 3, ... tokens: 7 drafts after the first chunk, 8 accepted tokens per request.
        # (window edges cut requests, so the windows' counts are near that ratio, not exactly it)
        assert s.spec.mean_acceptance_length == pytest.approx(1 + 8 / 7, rel=0.02)
        assert len({r.prompt_index for r in t.requests}) == len(t.requests)  # no prompt sent twice
        assert t.pkg.manifest.provenance.hardware == "2x NVIDIA H200"
        assert tel.extra["events"][0]["gpu"] == 1 and tel.extra["status"] == "ok"
        assert tel.summary.windows[1].gpus[0].samples > 0
    finally:
        t.close()
        tel.close()


def test_unavailable_telemetry_of_two_runs_are_two_packages(tmp_path):
    a, b = synthetic_run("a"), synthetic_run("a", interval=0.02)
    for r in (a, b):
        r.telemetry.status, r.telemetry.devices, r.telemetry.gpu_rows, r.telemetry.gpm_rows = "unavailable: x", [], [], []
    _, ta = write_run(tmp_path, "a", a)
    _, tb = write_run(tmp_path, "b", b)
    ma, mb = (json.loads((t / "manifest.json").read_text()) for t in (ta, tb))
    assert ma["package_id"] != mb["package_id"]  # the link to the run is part of the content


def test_the_model_directory_is_llama_3_1_8b(tmp_path):
    import importlib.util

    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location("bench_model", REPO / "scripts" / "bench_model.py")
    bm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bm)
    assert bm.param_count(bm.CONFIG) == bm.PUBLISHED_PARAMS == 8_030_261_248
    assert len(bm.SPECIAL) == 256 and bm.SPECIAL[9] == "<|eot_id|>"  # id 128009
    bm.write_config(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text()) == bm.CONFIG


@pytest.mark.slow
def test_several_servers_share_the_load(tmp_path):
    with FakeOpenAIServer(max_model_len=4096, token_delay=0.002) as s1, \
            FakeOpenAIServer(max_model_len=4096, token_delay=0.002) as s2:
        cfg = BenchConfig(arm="two", servers=(s1.url, s2.url), concurrency=2, prompt_tokens=30, max_tokens=8,
                          ignore_eos=True, windows=2, window_s=0.5, telemetry=False)
        res = run(cfg, layer=FakeLayer(), work_parent=tmp_path)
        sent = (len(s1.state.generate_requests), len(s2.state.generate_requests))
    slots = {(r.server, r.slot) for r in res.rows}
    assert slots == {(0, 0), (0, 1), (1, 0), (1, 1)} and min(sent) > 0
    assert sum(sent) == len(res.rows)
    s = figures.summarize("two", res.rows, res.windows, cfg.stall_s)
    assert all(w.valid for w in s.windows)
    # Four requests in flight: each window counts the tokens of all of them.
    assert s.windows[0].tokens == sum(1 for r in res.rows if r.phase == "timed" for o in r.token_times
                                      if res.windows[0].start <= r.started_at + o < res.windows[0].end)
    assert res.servers[0]["url"] == s1.url and res.servers[1]["url"] == s2.url

"""audit.trace on the two real PyTorch profiler traces and on synthetic traces with known answers."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from audit.trace import reader as reader_mod
from audit.trace.analyze import DEFAULT_COLLECTIVES, TraceOptions, analyze, with_collectives
from audit.trace.reader import TraceError, TraceReader, to_ns
from tests.trace_builders import TID, TraceBuilder, decode_steps

RECSYS = "torch_profiler_traces/recsys_a100_sampled_rank-0.json.gz"
ALEXNET = "torch_profiler_traces/alexnet_a100_benchmark_trace.json.gz"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _reference_step_counts(path: Path, marker_prefix: str) -> list[Counter]:
    """Independent count: json.load the whole trace, join kernels to launches by correlation id,
    and place each launch between consecutive marker starts."""
    events = json.load(gzip.open(path))["traceEvents"]
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events
                 if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    starts = sorted(e["ts"] for e in events if e.get("cat") == "user_annotation"
                    and e.get("name", "").startswith(marker_prefix))
    steps = [Counter() for _ in starts[:-1]]
    for e in events:
        if e.get("cat") in GPU_CATS:
            t = launch_ts.get(e["args"].get("correlation"))
            for k in range(len(starts) - 1):
                if t is not None and starts[k] <= t < starts[k + 1]:
                    steps[k][(e["cat"], e["args"]["stream"])] += 1
    return steps


# --------------------------------------------------------------------------- real traces


def test_recsys_trace_hand_checked(shared):
    """Rank 0 of a 128-GPU recommendation model: ProfilerStep#551 and #552 bound one complete step."""
    path = shared(RECSYS)
    r = analyze(path)
    s = r.summary
    assert s.trace.events == 4855 and s.trace.kernels == 1154 and s.trace.memcpy == 40 and s.trace.memset == 10
    assert (s.trace.rank, s.trace.world_size) == (0, 128)
    assert s.linking.by_correlation == 1204 and s.linking.unlinked == 0
    assert (s.markers.found, s.markers.first, s.markers.last) == (2, "ProfilerStep#551", "ProfilerStep#552")
    assert s.markers.complete_steps == 1 and s.markers.gpu_events_after_last == 602
    st = s.steps
    assert st.kernels_per_step.min == st.kernels_per_step.max == 577
    assert {k: v.min for k, v in st.kernels_per_step_by_stream.items()} == {"7": 518, "23": 54, "84": 4, "203": 1}
    assert (st.memcpy_per_step.min, st.memset_per_step.min) == (20, 5)
    # 1682725898686653 - 1682725898079292 µs between the two markers
    assert st.step_us.median_us == 607361.0
    assert st.kernel_us.count == 577 and st.kernel_us.median_us == 22.0
    assert s.main_stream.stream == "7" and s.main_stream.chosen == "most kernels"
    assert [c.kind for c in s.collectives] == ["send_recv"]
    assert [p.median_us for p in s.collectives[0].positions] == [30669.0, 62783.0, 11727.0, 47652.0, 42496.0]
    # the independent count agrees, stream by stream
    ref = _reference_step_counts(path, "ProfilerStep#")
    assert len(ref) == 1
    assert sum(n for (cat, _), n in ref[0].items() if cat == "kernel") == 577
    assert {str(st_): n for (cat, st_), n in ref[0].items() if cat == "kernel"} == r.steps[0].kernels_by_stream
    # kernel rows add up to the step
    assert sum(k.count for k in r.kernels if k.category == "kernel") == 577
    assert sum(k.count_all for k in r.kernels if k.category == "kernel") == 1154


def test_alexnet_trace_has_no_step_markers_so_per_step_figures_are_refused(shared):
    r = analyze(shared(ALEXNET))
    s = r.summary
    assert s.steps is None and r.steps == [] and s.collectives == []
    assert s.markers.refused == ("no event matches the step marker /^ProfilerStep#\\d+$/ (markers are read from "
                                 "user_annotation, cpu_op, cpu_instant_event, operator, python_function events)")
    assert (s.trace.kernels, s.trace.memcpy, s.trace.memset) == (79, 16, 3)
    assert s.trace.devices == ["0: NVIDIA A100-PG509-200"]
    assert s.main_stream.window == "trace" and s.main_stream.stream == "7"
    # no figure divides a total by a guessed count
    assert all(k.per_step_min is None and k.count == 0 for k in r.kernels)
    assert sum(k.count_all for k in r.kernels if k.category == "kernel") == 79


def test_alexnet_other_markers(shared):
    """The benchmark's `measure|forward` annotations nest (the second lies inside the first): refused.
    Its two `clear_cache` annotations bound one step, whose kernels an independent count confirms."""
    path = shared(ALEXNET)
    with pytest.raises(TraceError, match=r"step markers overlap: .*measure\|forward.*traceEvents\[266\], \[278\]"):
        analyze(path, TraceOptions(step_marker=r"\|measure\|forward\]$"))
    r = analyze(path, TraceOptions(step_marker=r"^\[param\|clear_cache\]$"))
    assert r.summary.markers.found == 2 and r.summary.markers.complete_steps == 1
    ref = _reference_step_counts(path, "[param|clear_cache]")
    assert r.steps[0].kernels == sum(n for (cat, _), n in ref[0].items() if cat == "kernel") == 39
    assert r.summary.markers.gpu_events_after_last + r.summary.markers.gpu_events_before_first \
        + r.steps[0].kernels + r.steps[0].memcpy + r.steps[0].memset == 98


# --------------------------------------------------------------------------- synthetic traces


def test_decode_steps_figures(tmp_path):
    b = TraceBuilder()
    decode_steps(b, steps=3)
    r = analyze(b.write(tmp_path / "t.json"))
    s = r.summary
    assert s.markers.complete_steps == 3 and s.markers.gpu_events_after_last == 8
    assert s.steps.kernels_per_step == s.steps.kernels_per_step.model_copy(
        update={"median": 8.0, "min": 8, "max": 8, "constant": True})
    assert {k: v.min for k, v in s.steps.kernels_per_step_by_stream.items()} == {"7": 7, "13": 1}
    assert [row.main_stream_busy_us for row in r.steps] == [164.0, 166.0, 168.0]
    ms = s.main_stream
    assert (ms.stream, ms.window_us, ms.busy_us, ms.gaps) == ("7", 3000.0, 498.0, 6)
    assert ms.busy_fraction == 0.166
    assert ms.gap_median_us == 417.0 and ms.gap_max_us == 756.0
    assert ms.gap_histogram == {"<1us": 0, "1-10us": 0, "10-100us": 3, "100us-1ms": 3, ">=1ms": 0}
    assert ms.largest_gaps[0].before == "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>"
    assert ms.largest_gaps[0].after == "rms_norm_kernel" and ms.largest_gaps[0].step == 0


def test_gpu_work_belongs_to_the_step_of_its_launch_not_its_timestamp(tmp_path):
    """Every kernel runs 1.5 steps after its launch: by timestamp, step 0 would get none."""
    b = TraceBuilder()
    decode_steps(b, steps=3, lag=1500.0)
    r = analyze(b.write(tmp_path / "t.json"))
    assert [row.kernels for row in r.steps] == [8, 8, 8]
    assert r.steps[0].gpu_start_ns == 1_001_500_000


def test_cuda_graph_replays_count_in_their_launch_step(tmp_path):
    b = TraceBuilder()
    decode_steps(b, steps=3)
    s = analyze(b.write(tmp_path / "t.json")).summary
    g = s.cuda_graphs
    assert (g.graph_launches, g.kernels) == (3, 12)
    assert g.kernels_per_launch.min == g.kernels_per_launch.max == 4
    assert g.launches_per_step.constant and g.launches_per_step.min == 1
    assert any("CUDA-graph launches" in n for n in s.notes)


def test_all_reduce_by_position_in_the_step(tmp_path):
    """Position 0 is NCCL's all-reduce (100+k µs), position 1 vLLM's custom one (24+k µs)."""
    b = TraceBuilder()
    decode_steps(b, steps=3)
    r = analyze(b.write(tmp_path / "t.json"))
    (ar,) = r.summary.collectives
    assert ar.kind == "all_reduce" and ar.calls == 6 and ar.calls_per_step.constant
    assert [(p.position, p.steps, p.median_us, p.min_us, p.max_us) for p in ar.positions] == [
        (0, 3, 101.0, 100.0, 102.0), (1, 3, 25.0, 24.0, 26.0)]
    assert ar.positions[1].name.startswith("void vllm::cross_device_reduce_1stage")
    assert [(c.step, c.position, c.duration_us) for c in r.collectives] == [
        (0, 0, 100.0), (0, 1, 24.0), (1, 0, 101.0), (1, 1, 25.0), (2, 0, 102.0), (2, 1, 26.0)]
    rows = {k.name: k for k in r.kernels}
    assert rows["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"].collective == "all_reduce"
    assert rows["rms_norm_kernel"].collective is None


def test_user_collective_patterns_extend_the_list(tmp_path):
    b = TraceBuilder()
    decode_steps(b, steps=2)
    options = TraceOptions(collectives=with_collectives(DEFAULT_COLLECTIVES, ["sampler=^sampler_kernel$"]))
    kinds = {c.kind: c for c in analyze(b.write(tmp_path / "t.json"), options).summary.collectives}
    assert kinds["sampler"].calls == 2 and kinds["all_reduce"].calls == 4
    with pytest.raises(TraceError, match="KIND=REGEX"):
        with_collectives(DEFAULT_COLLECTIVES, ["no-equals-sign"])


@pytest.mark.parametrize("markers, reason", [
    (0, "no event matches the step marker"),
    (1, "only one step marker ('ProfilerStep#0'): a step needs a marker at each end"),
])
def test_missing_markers_refuse_per_step_figures(tmp_path, markers, reason):
    b = TraceBuilder()
    for k in range(markers):
        b.marker(f"ProfilerStep#{k}", 1000.0 + k)
    for i in range(5):
        b.kernel("k", 2000.0 + i, 3000.0 + 10 * i, 5.0)
    r = analyze(b.write(tmp_path / "t.json"))
    assert r.summary.steps is None and r.steps == [] and r.summary.markers.refused.startswith(reason)
    assert r.summary.trace.kernels == 5 and all(k.per_step_min is None for k in r.kernels)


def test_vllm_execute_annotations_need_their_marker(tmp_path):
    """vLLM 0.26 annotates each engine step `execute_context_N(T)_generation_M(T)`; the default marker
    finds nothing and says what to use; --step-filter keeps the decode-only steps."""
    b = TraceBuilder()
    names = ["execute_context_1(16)_generation_0(0)"] + ["execute_context_0(0)_generation_1(1)"] * 4
    for k, name in enumerate(names):
        t0 = 1000.0 * (k + 1)
        b.marker(name, t0, dur=400.0)
        for i in range(3 if k == 0 else 2):
            b.kernel("k", t0 + 10 + i, t0 + 500 + i * 10, 5.0)
    path = b.write(tmp_path / "dp0_pp0_tp0_dcp0_ep0_rank0.1764000000000000000.pt.trace.json.gz")
    s = analyze(path).summary
    assert s.steps is None and any("--step-marker '^execute_context_'" in n for n in s.notes)
    r = analyze(path, TraceOptions(step_marker="^execute_context_"))
    assert [row.kernels for row in r.steps] == [3, 2, 2, 2]
    assert not r.summary.steps.kernels_per_step.constant
    r = analyze(path, TraceOptions(step_marker="^execute_context_",
                                   step_filter=r"_context_0\(0\)_generation_[1-9]"))
    assert [row.selected for row in r.steps] == [False, True, True, True]
    assert r.summary.steps.steps == 3 and r.summary.steps.kernels_per_step.constant


def test_flow_events_link_gpu_events_without_a_correlation(tmp_path):
    b = TraceBuilder()
    b.marker("ProfilerStep#0", 1000.0)
    b.marker("ProfilerStep#1", 2000.0)
    b.kernel("with_corr", 1100.0, 1200.0, 5.0, flow=True)
    b.kernel("flow_only", 1150.0, 1300.0, 5.0, with_correlation=False, flow=True)
    b.kernel("orphan", 1160.0, 1400.0, 5.0, with_correlation=False)  # neither: never placed by timestamp
    r = analyze(b.write(tmp_path / "t.json"))
    ln = r.summary.linking
    assert (ln.by_correlation, ln.by_flow, ln.unlinked, ln.flow_disagreements) == (1, 1, 1, 0)
    assert r.steps[0].kernels == 2
    assert any("no launching CPU event" in n for n in r.summary.notes)


def test_driver_launches_and_several_streams_and_devices(tmp_path):
    b = TraceBuilder()
    b.marker("ProfilerStep#0", 1000.0)
    b.marker("ProfilerStep#1", 2000.0)
    corr = b.launch(1100.0, name="cuLaunchKernel", cat="cuda_driver")
    b.gpu("triton_poi_fused", 1500.0, 4.0, corr, stream=7)
    b.kernel("k2", 1200.0, 1600.0, 4.0, stream=21)
    b.kernel("k3", 1300.0, 1700.0, 4.0, stream=21)
    r = analyze(b.write(tmp_path / "t.json"))
    assert r.steps[0].kernels_by_stream == {"7": 1, "21": 2}
    assert r.summary.main_stream.stream == "21"
    r = analyze(tmp_path / "t.json", TraceOptions(main_stream="7"))
    assert r.summary.main_stream.stream == "7" and r.summary.main_stream.chosen == "given"
    with pytest.raises(TraceError, match="--main-stream 9: no such stream"):
        analyze(tmp_path / "t.json", TraceOptions(main_stream="9"))


def test_markers_on_two_threads_or_overlapping_are_refused(tmp_path):
    b = TraceBuilder()
    b.marker("ProfilerStep#0", 1000.0, tid=TID)
    b.marker("ProfilerStep#1", 2000.0, tid=TID + 1)
    b.kernel("k", 1100.0, 1200.0, 5.0)
    with pytest.raises(TraceError, match="are on 2 threads"):
        analyze(b.write(tmp_path / "a.json"))
    b = TraceBuilder()
    b.marker("step", 1000.0, dur=500.0)
    b.marker("step", 1200.0, dur=100.0)
    b.kernel("k", 1100.0, 1200.0, 5.0)
    with pytest.raises(TraceError, match="step markers overlap"):
        analyze(b.write(tmp_path / "b.json"), TraceOptions(step_marker="^step$"))


def test_gpu_copies_of_annotations_are_not_markers(tmp_path):
    """Kineto repeats ProfilerStep#N on the GPU timeline (gpu_user_annotation); only the CPU one counts."""
    b = TraceBuilder()
    decode_steps(b, steps=2)
    for k in range(3):
        b.events.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{k}", "pid": 0, "tid": 7,
                         "ts": 5000.0 + k, "dur": 1.0})
    assert analyze(b.write(tmp_path / "t.json")).summary.markers.found == 3


def test_cpu_only_trace_is_an_error(tmp_path):
    b = TraceBuilder()
    b.marker("ProfilerStep#0", 1.0)
    with pytest.raises(TraceError, match="no GPU activity"):
        analyze(b.write(tmp_path / "frontend.async_llm.123.pt.trace.json.gz"))


# --------------------------------------------------------------------------- reader


@pytest.mark.parametrize("text, ns", [
    (1695835542514261, 1695835542514261000), ("1695835542514261.123", 1695835542514261123),
    ("2.5", 2500), ("68.0", 68000), ("0.0005", 0), ("0.0015", 2), ("1e3", 1000000), ("-1.5", -1500),
    ("x", None), (None, None), (True, None),
])
def test_to_ns_is_exact(text, ns):
    assert to_ns(text) == ns


def test_reader_across_tiny_chunks_matches_json_load(tmp_path, monkeypatch, shared):
    """Every event and every top-level key survive refills at arbitrary places (1 KiB chunks)."""
    monkeypatch.setattr(reader_mod, "CHUNK_CHARS", 1024)
    for name in (ALEXNET, RECSYS):
        path = shared(name)
        r = TraceReader(path)
        events = [e for _, e in r.events()]
        ref = json.load(gzip.open(path), parse_float=str)
        assert events == ref.pop("traceEvents") and r.metadata == ref
    b = TraceBuilder()
    decode_steps(b, steps=2)
    b.meta["baseTimeNanoseconds"] = 1764000000123456789  # a number that a chunk may cut
    path = b.write(tmp_path / "t.json", indent=3)
    for chunk in (7, 64, 333):
        monkeypatch.setattr(reader_mod, "CHUNK_CHARS", chunk)
        r = TraceReader(path)
        assert len(list(r.events())) == len(b.events)
        assert r.metadata["baseTimeNanoseconds"] == 1764000000123456789


def test_reader_hashes_the_whole_file_and_detects_gzip_by_content(tmp_path):
    import hashlib

    b = TraceBuilder()
    decode_steps(b, steps=1)
    path = b.write(tmp_path / "misnamed.json", gz=True)
    r = TraceReader(path)
    list(r.events())
    assert r.gzip and r.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and r.bytes == path.stat().st_size


def test_every_option_round_trips_through_the_recorded_config():
    """Issue 27 item 6: the recorded configuration rebuilds its options through one method, so an option added to
    TraceOptions and left out of TraceConfig (or of the recompute) fails here. Each field gets a value unlike its
    default; only NOT_RECORDED fields (bounds on the read, not figures) are left out of the config."""
    import dataclasses

    from audit.trace.analyze import ANALYSIS_VERSION, NOT_RECORDED

    unlike = {"step_marker": r"^step_\d+$", "step_filter": "odd", "collectives": {"all_reduce": ("ar_k",)},
              "main_stream": "7", "embed_limit_bytes": 1234, "marker_categories": ("cpu_op",),
              "collective_ops": {"broadcast": ("nccl:bcast",)}, "step_span": "marker", "analysis": ANALYSIS_VERSION,
              "max_json_chars": 99}
    fields = {f.name for f in dataclasses.fields(TraceOptions)}
    assert fields == set(unlike), f"give the new option {fields - set(unlike)} a value here"
    options = TraceOptions(**unlike)
    again = TraceOptions.from_config(options.to_config())
    for name in fields - set(NOT_RECORDED):
        assert getattr(again, name) == unlike[name], name
        # (analysis: the version this audit writes; its only other value, 1, records fewer fields: below)
        assert name == "analysis" or unlike[name] != getattr(TraceOptions(), name), name
    assert set(NOT_RECORDED) == {"max_json_chars"}
    # analysis 1 recorded only the first fields: the rest read back as analysis 1's reading
    old = TraceOptions.from_config(TraceOptions(analysis=1, collective_ops={}).to_config())
    assert (old.analysis, old.step_span, old.collective_ops) == (1, "next_marker", {})

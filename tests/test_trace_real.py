"""audit.trace on the real multi-GPU inference traces of issue 22 (vLLM tensor-parallel-4 decode on H100 and
MI300X, HTA's CUPTI range-profiler and MTIA traces): collective counts and positions, step markers, refusals.

The expected figures were counted independently (json.load of the whole trace; each collective kernel joined to
its launch by correlation id and to the CPU op enclosing that launch): per engine step, 161 all-reduces (vLLM's
cross_device_reduce_1stage in the CUDA-graph decode steps, NCCL/RCCL in the eager prefill step) and one
all-gather of the logits.
"""

from __future__ import annotations

import pytest

from audit.trace.analyze import TraceOptions, analyze
from audit.trace.collect import MARKER_CATEGORIES_V1, VLLM_WORKER_STEP_MARKER
from audit.trace.reader import TraceError
from tests.trace_builders import TraceBuilder

H100 = "torch_profiler_traces/vllm_tp4_h100_1000isl_10osl_32con.pt.trace.json.gz"
MI300X = "torch_profiler_traces/vllm_tp4_mi300x_1000isl_10osl_32con.pt.trace.json.gz"
CUPTI = "torch_profiler_traces/hta_cupti_profiler_range_trace.json.gz"
MTIA = "torch_profiler_traces/hta_mtia_inference_rank_0.json.gz"
MI250 = "torch_profiler_traces/hta_amd_mi250_minitoy_train_rocm6_2.json.gz"
FUSED = "triton_poi_fused_add_all_reduce_bitwise_and_bitwise_or_embedding_ge_lt_masked_fill_mul_sub_0"
CATEGORIES = "user_annotation, cpu_op, cpu_instant_event, operator, python_function"
ENGINE = TraceOptions(step_marker=VLLM_WORKER_STEP_MARKER)

_cache: dict = {}


def _run(shared, rel: str, options: TraceOptions = ENGINE):
    key = (rel, repr(options))
    if key not in _cache:
        _cache[key] = analyze(shared(rel), options)
    return _cache[key]


def _kinds(result):
    return {ck.kind: ck for ck in result.summary.collectives}


@pytest.mark.slow
@pytest.mark.parametrize("rel", [H100, MI300X])
def test_vllm_engine_steps_are_python_function_markers(shared, rel):
    r = _run(shared, rel)
    m = r.summary.markers
    assert (m.found, m.complete_steps, m.refused) == (11, 10, None)
    assert m.first.endswith("gpu_worker.py(263): execute_model" if rel == H100 else
                            "gpu_worker.py(258): execute_model")
    assert [row.collectives for row in r.steps] == [{"all_gather": 1, "all_reduce": 161}] * 10


@pytest.mark.slow
@pytest.mark.parametrize("rel", [H100, MI300X])
def test_default_marker_refusal_names_the_categories_and_the_vllm_marker(shared, rel):
    s = _run(shared, rel, TraceOptions()).summary
    assert s.markers.refused == (f"no event matches the step marker /^ProfilerStep#\\d+$/ (markers are read "
                                 f"from {CATEGORIES} events)")
    assert s.notes[:2] == [
        "the trace has 11 vLLM engine steps (python_function …gpu_worker.py(N): execute_model): try "
        "--step-marker 'gpu_worker\\.py\\(\\d+\\): execute_model$'",
        f"no per-step figures: {s.markers.refused}"]


def test_h100_fused_triton_kernel_is_no_all_reduce(shared):
    r = _run(shared, H100)
    ar = _kinds(r)["all_reduce"]
    assert ar.calls == 1610 and (ar.calls_per_step.min, ar.calls_per_step.max) == (161, 161)
    # every position holds the same call in each step: the decode steps' cross_device_reduce, never the fused kernel
    assert len(ar.positions) == 161
    assert all(p.steps == 10 and p.name.startswith("void vllm::cross_device_reduce_1stage<") for p in ar.positions)
    rows = [c for c in r.collectives if c.kind == "all_reduce"]
    assert not any(c.name == FUSED for c in rows)
    prefill = [c.name for c in rows if c.step == 0]
    assert len(prefill) == 161 and set(prefill) == {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, "
                                                    "unsigned long, ncclWork*)"}
    fused = next(k for k in r.kernels if k.name == FUSED)
    assert (fused.collective, fused.count) == (None, 10)
    assert _kinds(r)["all_gather"].calls == 10


@pytest.mark.slow
def test_h100_analysis_1_keeps_counting_the_fused_kernel(shared):
    """A package written by analysis 1 recomputes as it was written: the substring patterns it records."""
    old = TraceOptions(step_marker=VLLM_WORKER_STEP_MARKER, analysis=1, collective_ops={},
                       collectives={"all_reduce": ("allreduce", "all_reduce", "cross_device_reduce")})
    r = _run(shared, H100, old)
    assert [row.collectives.get("all_reduce") for row in r.steps] == [162] * 10
    assert r.summary.config.analysis == 1 and r.summary.config.collective_ops == {}


def test_mi300x_rccl_generic_kernels_take_the_kind_of_their_enclosing_op(shared):
    r = _run(shared, MI300X)
    generic = "ncclDevKernel_Generic_2(ncclDevKernelArgsStorage<4096ul>)"
    rows = [c for c in r.collectives if c.name == generic]
    assert len(rows) == 171
    assert sum(c.kind == "all_reduce" for c in rows) == 161 and all(c.step == 0 for c in rows
                                                                     if c.kind == "all_reduce")
    assert sum(c.kind == "all_gather" for c in rows) == 10
    ar = _kinds(r)["all_reduce"]
    assert ar.calls == 1610 and (ar.calls_per_step.min, ar.calls_per_step.max) == (161, 161)
    assert _kinds(r)["all_gather"].calls == 10
    assert next(k for k in r.kernels if k.name == generic).collective == "all_gather+all_reduce"
    assert not any("NCCL/RCCL kernels" in n for n in r.summary.notes)


@pytest.mark.slow
def test_mi300x_without_op_patterns_says_how_many_were_left_out(shared):
    r = _run(shared, MI300X, TraceOptions(step_marker=VLLM_WORKER_STEP_MARKER, collective_ops={}))
    assert "all_gather" not in _kinds(r) and _kinds(r)["all_reduce"].calls == 1449
    assert ("171 NCCL/RCCL kernels (42.660 ms) are not counted as collectives: neither their name nor a "
            "communication op enclosing their launch (nccl:*, c10d::*, vllm::*, record_param_comms) names a "
            "collective kind") in r.summary.notes


@pytest.mark.slow
def test_marker_categories_are_recorded_and_old_ones_still_read(shared):
    r = _run(shared, H100, TraceOptions(step_marker=VLLM_WORKER_STEP_MARKER, marker_categories=MARKER_CATEGORIES_V1))
    assert r.summary.markers.found == 0
    assert r.summary.config.marker_categories == list(MARKER_CATEGORIES_V1)


@pytest.mark.parametrize("rel, message", [
    (CUPTI, "no GPU activity (kernel, gpu_memcpy, gpu_memset events): a CUPTI range-profiler trace (77 "
            "cuda_profiler_range events hold counters per range, not kernels); take the trace with CUDA activity "
            "(ProfilerActivity.CUDA) and without the range profiler"),
    (MTIA, "no GPU activity (kernel, gpu_memcpy, gpu_memset events): the device activity is mtia_ccp_events 1,313, "
           "mtia_runtime 823 (an accelerator other than a CUDA or ROCm GPU), which audit trace does not read"),
])
def test_device_traces_without_kernels_are_refused_for_what_they_hold(cli, shared, tmp_path, rel, message):
    path = shared(rel)
    r = cli("trace", "--unattributed", path, "-o", tmp_path / "pkg")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {path}: {message}\n")
    assert not (tmp_path / "pkg").exists()


def test_cpu_only_trace_gets_the_vllm_hint_only_where_it_applies(tmp_path):
    b = TraceBuilder()
    b.marker("ProfilerStep#0", 1.0)
    with pytest.raises(TraceError) as plain:
        analyze(b.write(tmp_path / "train.pt.trace.json"))
    assert str(plain.value).endswith("no GPU activity (kernel, gpu_memcpy, gpu_memset events): a CPU-only trace "
                                     "(it holds user_annotation 1)")
    with pytest.raises(TraceError) as frontend:
        analyze(b.write(tmp_path / "frontend.async_llm.123.pt.trace.json"))
    assert str(frontend.value).endswith("(it holds user_annotation 1); a vLLM server's API process writes such a "
                                        "trace (*.async_llm.*): the GPU workers' traces hold the kernels")


def _one_marker(tmp_path):
    b = TraceBuilder()
    b.marker("ProfilerStep#7", 1000.0, dur=500.0)
    for i in range(3):
        b.kernel("gemm", 1100.0 + i, 2000.0 + 10 * i, 5.0)
    b.kernel("after", 1600.0, 2100.0, 5.0)  # launched after the marker's span: in no step either way
    return b.write(tmp_path / "one.json")


def test_one_marker_is_refused_with_the_span_reading_offered(tmp_path):
    s = analyze(_one_marker(tmp_path)).summary
    assert s.steps is None
    assert s.markers.refused == ("only one step marker ('ProfilerStep#7'): a step needs a marker at each end, so no "
                                 "step is complete; --step-span marker counts the marker's own span as one step "
                                 "(HTA 0.5.0 reads marker spans too, but drops the last ProfilerStep by default, "
                                 "which leaves it none here)")
    old = analyze(_one_marker(tmp_path), TraceOptions(analysis=2)).summary  # analysis 2's words, as recorded
    assert old.markers.refused.endswith("--step-span marker counts the marker's own span as one step (as HTA does)")


def test_step_span_marker_counts_the_marker_span_as_a_labelled_step(cli, tmp_path):
    r = analyze(_one_marker(tmp_path), TraceOptions(step_span="marker"))
    s = r.summary
    assert s.config.step_span == "marker" and s.markers.complete_steps == 1
    assert s.steps.kernels_per_step.min == s.steps.kernels_per_step.max == 3
    assert s.steps.step_us.median_us == 500.0 and s.markers.gpu_events_after_last == 1
    out = cli("trace", "--unattributed", _one_marker(tmp_path), "-o", tmp_path / "pkg", "--step-span", "marker")
    assert out.code == 0
    assert ("steps       1, each a marker's own span (--step-span marker); GPU events launched before the first "
            "marker: 0, after the last one's span: 1\n") in out.out
    assert "step time   median 500.000 µs (marker's span)" in out.out


def test_step_span_marker_on_a_real_trace(shared):
    """HTA's MI250 trace: two ProfilerStep markers are two steps read as spans, one step read start to start."""
    spans = _run(shared, MI250, TraceOptions(step_span="marker")).steps
    assert [row.kernels for row in spans] == [14, 0]
    assert [row.kernels for row in _run(shared, MI250, TraceOptions()).steps] == [14]


def test_step_span_marker_needs_marker_durations(tmp_path):
    b = TraceBuilder()
    b.marker("ProfilerStep#0", 1000.0, dur=None)
    b.kernel("gemm", 1100.0, 2000.0, 5.0)
    with pytest.raises(TraceError, match=r"--step-span marker: the step marker 'ProfilerStep#0' \(traceEvents\[0\]\) "
                                         r"has no duration"):
        analyze(b.write(tmp_path / "t.json"), TraceOptions(step_span="marker"))


@pytest.mark.slow
def test_the_evidence_package_of_analysis_1_still_recomputes_as_written():
    """packages/evidence-h200-trace/profile-decode-tp1 was written before `config.analysis`: it reads as 1 and
    the profile kind's reader (what `audit show`, `audit trace diff` and the claims recipes use) recomputes it
    with analysis 1's options (audit verify's M13 and M15 rest on it)."""
    from pathlib import Path

    from audit.packages import open_package
    from audit.trace.package import read_checked

    pkg_dir = Path(__file__).resolve().parent.parent / "packages/evidence-h200-trace/profile-decode-tp1"
    with open_package(pkg_dir, kind="profile") as pkg:
        checked = read_checked(pkg, "profile-decode-tp1")
        loaded, how = checked.loaded, checked.how
    cfg = loaded.summary.config
    assert (cfg.analysis, cfg.step_span, cfg.collective_ops) == (1, "next_marker", {})
    assert "python_function" not in cfg.marker_categories
    assert how.startswith("recomputed from the trace in the package")
    assert loaded.summary.steps.kernels_per_step.median == 436


@pytest.mark.slow
def test_every_step_between_vllm_markers_of_the_moe_decode_trace_with_no_step_filter():
    """The H200 Qwen3-Next trace in packages/evidence-h200-moe, read without the decode filter: 18 markers,
    17 steps: the prefill step, the first (context 1, 6 tokens), has 2,070 kernels, and the empty one is the last
    (vLLM's idle `execute_context_0(0)_generation_0(0)`), as the package's README says. On the device, in the run
    that made the package, this crashed with an IndexError in `_kernel_rows` (logs/5-h200_trace.log); analysis by
    named steps fixed it."""
    from pathlib import Path

    trace = next((Path(__file__).resolve().parent.parent /
                  "packages/evidence-h200-moe/profile-decode-tp1/trace").glob("*.pt.trace.json.gz"))
    result = analyze(trace, TraceOptions(step_marker="^execute_context_"))
    s = result.summary
    assert (s.markers.found, s.markers.complete_steps, s.steps.steps) == (18, 17, 17)
    k = s.steps.kernels_per_step
    assert (k.median, k.min, k.max) == (1596, 0, 2070)
    first, last = result.steps[0], result.steps[-1]
    assert (first.marker, first.kernels) == ("execute_context_1(6)_generation_0(0)", 2070)
    assert (last.marker, last.kernels) == ("execute_context_0(0)_generation_0(0)", 0)
    assert {st.kernels for st in result.steps[1:-1]} == {1596}
    assert sum(r.count for r in result.kernels if r.category == "kernel") == s.trace.kernels == 26010

"""Messages that misled on real ROCm and SGLang traces (issue 32, item 4), each on the real trace that shows it:
cut-downs of AMD-AGI/TraceLens's MIT-licensed traces under tests/data/tracelens (see its README)."""

from __future__ import annotations

from pathlib import Path

from audit.trace.analyze import TraceOptions, analyze
from audit.trace.report import render_summary

DATA = Path(__file__).parent / "data" / "tracelens"
RESNET = DATA / "mi300x_resnet_act_checkpoint.step15.json.gz"
VLLM_ROCM = DATA / "vllm_decode_full_rocm.gpu_events.json.gz"
SGLANG = DATA / "sglang_qwen3_8b_prefilldecode.first40.json.gz"


def test_a_rocm_device_without_a_name_is_shown_by_its_id():
    s = analyze(VLLM_ROCM).summary
    assert s.trace.devices == ["2"]
    assert "GPU 2\n" in render_summary(s) and "GPU 2: " not in render_summary(s)
    assert analyze(VLLM_ROCM, TraceOptions(analysis=2)).summary.trace.devices == ["2: "]  # as analysis 2 recorded
    assert analyze(RESNET).summary.trace.devices == ["2: AMD Instinct MI300X"]


def test_rocm_spacing_of_one_ns_between_kernels_is_no_gap():
    new, old = (analyze(RESNET, TraceOptions(analysis=a)).summary.main_stream for a in (3, 2))
    # ROCm writes back-to-back kernels 1 ns apart: 683 such stretches in step 15, none 2 ns to 1 µs
    assert (old.gaps, old.gap_histogram["<1us"], old.gap_median_us) == (890, 683, 0.001)
    assert (new.gaps, new.gap_histogram["<1us"], new.gap_median_us) == (207, 0, 3.401)
    assert new.gap_histogram["1-10us"] == old.gap_histogram["1-10us"] == 201
    assert (new.busy_fraction, new.idle_us) == (old.busy_fraction, old.idle_us) == (0.373253, 11895.876)


def test_sglang_step_annotations_get_a_step_marker_hint():
    s = analyze(SGLANG).summary
    assert s.steps is None
    assert s.notes[0] == ("the trace has 1 SGLang step annotations (step[EXTEND bs=… toks=…], step[DECODE …]): try "
                          "--step-marker '^step\\['")
    hinted = analyze(SGLANG, TraceOptions(step_marker=r"^step\[")).summary
    assert (hinted.markers.found, hinted.markers.first) == (1, "step[EXTEND bs=15 toks=15360]")
    assert not any("SGLang" in n for n in analyze(SGLANG, TraceOptions(analysis=2)).summary.notes)


def test_step_span_marker_says_htas_count_is_one_fewer():
    """HTA 0.5.0 drops the last ProfilerStep by default: on these three markers it reports 2 steps, as audit's
    default reading does; --step-span marker reports 3 and says why they differ."""
    by_span = analyze(RESNET, TraceOptions(step_span="marker")).summary
    assert by_span.markers.complete_steps == 3 and analyze(RESNET).summary.markers.complete_steps == 2
    assert by_span.notes[0] == ("--step-span marker: each of the 3 markers' own spans is a step; HTA 0.5.0 drops the "
                                "last ProfilerStep by default, so it reports 2 (a step marker at each end, the "
                                "default --step-span next_marker, gives HTA's count)")
    assert "HTA" not in " ".join(analyze(RESNET, TraceOptions(step_span="marker", analysis=2)).summary.notes)

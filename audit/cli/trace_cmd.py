"""`audit trace TRACE -o PACKAGE` and `audit trace diff A B`: PyTorch profiler traces."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import CONTEXT, cli
from audit.subject import subject_options

_DEFAULT = "summarize"


class _TraceGroup(click.Group):
    """`audit trace TRACE ...` runs `summarize`; `audit trace diff ...` runs `diff`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = [_DEFAULT, *args]
        elif not args:
            args = [_DEFAULT]
        return super().parse_args(ctx, args)


def _options(step_marker: str, step_filter: str | None, collective: tuple[str, ...], main_stream: str | None,
             step_span: str, max_json_mb: float, embed_limit_mb: float = 20.0):
    from audit.trace.analyze import DEFAULT_COLLECTIVES, TraceOptions, with_collectives

    return TraceOptions(step_marker=step_marker, step_filter=step_filter,
                        collectives=with_collectives(DEFAULT_COLLECTIVES, collective), main_stream=main_stream,
                        embed_limit_bytes=int(round(embed_limit_mb * 1_000_000)), step_span=step_span,
                        max_json_chars=int(max_json_mb * 1_000_000))


def _step_options(f):
    from audit.trace import DEFAULT_STEP_MARKER

    f = click.option("--main-stream", metavar="STREAM",
                     help="Stream whose busy time and gaps are reported (default: the one that ran the most "
                          "kernels); `DEVICE:STREAM` when the trace spans several GPUs.")(f)
    f = click.option("--max-json-mb", type=click.FloatRange(min=1), default=4000.0, show_default=True,
                     metavar="MB", help="Refuse a trace of more JSON text than this (after gzip).")(f)
    f = click.option("--step-span", type=click.Choice(["next_marker", "marker"]), default="next_marker",
                     show_default=True,
                     help="next_marker: a step runs from its marker to the next one (N markers, N-1 steps); "
                          "marker: a step is its marker's own span (N markers, N steps; HTA 0.5.0 drops the last).")(f)
    f = click.option("--collective", multiple=True, metavar="KIND=REGEX",
                     help="Add a kernel-name pattern (case-insensitive re.search) to a collective kind, e.g. "
                          "all_reduce=my_ar_kernel; repeatable. Built in, by kernel family (never a word inside "
                          "a fused kernel's name): all_reduce (NCCL AllReduce, vLLM cross_device_reduce, "
                          "symmetric-memory all_reduce), all_gather, reduce_scatter, all_to_all, send_recv, "
                          "broadcast. An NCCL/RCCL kernel whose name says no kind (ncclDevKernel_Generic) takes "
                          "the kind of the communication op enclosing its launch (nccl:*, c10d::*, vllm::*, "
                          "record_param_comms).")(f)
    f = click.option("--step-filter", metavar="REGEX",
                     help="Count only steps whose marker name matches, e.g. '_context_0\\(0\\)_generation_[1-9]' for "
                          "vLLM's decode-only steps; the other markers still bound steps.")(f)
    f = click.option("--step-marker", metavar="REGEX", default=DEFAULT_STEP_MARKER, show_default=True,
                     help="CPU event that starts a step (re.search on the names of user_annotation, cpu_op, "
                          "cpu_instant_event, operator and python_function events). vLLM 0.26 marks each engine "
                          "step with '^execute_context_'; older vLLM V1 traces taken with Python stacks with "
                          "'gpu_worker\\.py\\(\\d+\\): execute_model$'.")(f)
    return f


@cli.group("trace", cls=_TraceGroup, context_settings=CONTEXT)
def trace() -> None:
    """PyTorch profiler (Kineto) traces: where each step's time goes.

    \b
      audit trace TRACE.json[.gz] -o PACKAGE   summarise a trace into a profile package
      audit trace diff A B                     per-kernel count and time changes

    `audit trace TRACE ...` is short for `audit trace summarize TRACE ...`.
    """


@trace.command(_DEFAULT)
@click.argument("trace_file", metavar="TRACE.json[.gz]", type=click.Path(path_type=Path, dir_okay=False))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, metavar="PACKAGE",
              help="Directory of the profile package to write.")
@_step_options
@click.option("--embed-limit-mb", type=click.FloatRange(min=0), default=20.0, show_default=True, metavar="MB",
              help="Copy the raw trace into the package when it is at most this size; else pin it by sha256.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (schemas/trace_summary.v1.json).")
@click.option("--force", is_flag=True, help="Replace PACKAGE if it exists.")
@subject_options(unattributed=True)
def summarize(trace_file: Path, output: Path, step_marker: str, step_filter: str | None,
              collective: tuple[str, ...], main_stream: str | None, step_span: str, max_json_mb: float,
              embed_limit_mb: float, as_json: bool, force: bool, **subject_flags) -> int:
    """Summarise one trace into a profile package.

    Steps run from one step marker's start to the next one's: N markers bound N-1 complete
    steps (or, with --step-span marker, each marker's own span is a step). Every GPU kernel,
    memcpy and memset counts in the step where the CPU event that launched it started (matched
    through its correlation id, or its ac2g flow), never by its own timestamp; CUDA-graph
    replays count in the step of their graph launch. Without a complete step, per-step figures
    are refused, not estimated. Reports kernels per step (per
    stream, and whether constant), median step and kernel durations, the main stream's busy
    fraction and gaps, CUDA-graph replays, and collectives by position within the step.

    Reads .json or .json.gz (detected from the bytes) in one streaming pass. Bad input (not
    JSON, truncated gzip, no traceEvents, events missing fields) gets a one-line error, exit 2,
    and nothing is written.

    The package names what the trace measured: --model-name, --model-config, --engine, --weights
    and --run (--hardware defaults to the GPUs the trace names); without them it is refused, unless
    --unattributed says the trace is someone else's and its subject unknown.
    """
    from audit.fileio import dumps_pretty
    from audit.packages import content_digest
    from audit.subject import args_from, resolve_subject
    from audit.trace.package import summarize_to_package
    from audit.trace.report import render_summary

    flags = args_from(subject_flags)
    # refused before a large trace is read: everything but the hardware, which the trace may name
    resolve_subject(flags, what="profile", gpu_evidence=True, default_hardware="from the trace")
    options = _options(step_marker, step_filter, collective, main_stream, step_span, max_json_mb, embed_limit_mb)
    manifest, summary = summarize_to_package(
        trace_file, output, options, force=force,
        subject=lambda hardware: resolve_subject(flags, what="profile", gpu_evidence=True,
                                                 default_hardware=hardware))
    if as_json:
        click.echo(dumps_pretty(summary.model_dump(mode="json")), nl=False)
    else:
        click.echo(render_summary(summary), nl=False)
    click.echo(f"wrote {output}: profile package, {len(manifest.files)} files, "
               f"content digest {content_digest(manifest.files)[:16]}…", err=as_json)
    return 0


@trace.command("diff")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@_step_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Text for people; JSON (schemas/trace_diff.v1.json) holds every kernel name.")
@click.option("--top", type=click.IntRange(min=0), default=40, show_default=True, metavar="N",
              help="Kernel names printed in text (largest time change first); 0 for all.")
def diff(a: Path, b: Path, step_marker: str, step_filter: str | None, collective: tuple[str, ...],
         main_stream: str | None, step_span: str, max_json_mb: float, fmt: str, top: int) -> int:
    """Per-kernel-name count and time changes between A and B (trace files or profile packages).

    Per step when both sides have complete steps (each side divided by its own step count),
    else whole-trace totals. Step options apply to trace files; a package keeps the options
    it was written with. Exit 0 when every kernel name's count is the same, 1 when any count
    changed, 2 on error.
    """
    from audit.fileio import dumps_pretty
    from audit.trace.diff import diff_traces
    from audit.trace.report import render_diff

    report = diff_traces(a, b, _options(step_marker, step_filter, collective, main_stream, step_span, max_json_mb))
    if fmt == "json":
        click.echo(dumps_pretty(report.model_dump(mode="json")), nl=False)
    else:
        click.echo(render_diff(report, top=top or None), nl=False)
    return 1 if report.count_changes else 0

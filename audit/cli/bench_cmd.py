"""`audit bench`: decode throughput and GPU counters into packages; compare two arms; report a run."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from audit import procs
from audit.cli.app import cli
from audit.subject import subject_options


@cli.group(no_args_is_help=True)
def bench() -> None:
    """Measure decode throughput with GPU counters; compare arms; report a run."""


@bench.command(context_settings={"show_default": True})
@click.option("--server", "servers", multiple=True, metavar="URL",
              help="A running vLLM OpenAI-compatible server; repeat to load several at once.")
@click.option("--launch", metavar="'ARGS'",
              help="Start vLLM's OpenAI server with these arguments (or a whole 'vllm serve MODEL ...' line); "
                   "stop it at the end.")
@click.option("--launch-program", default="{python} -m vllm.entrypoints.openai.api_server", metavar="CMD",
              help="The command that starts the server ({python}: this interpreter).")
@click.option("--launch-timeout", type=float, default=900.0, metavar="S", help="Seconds to wait for /health.")
@click.option("--model", metavar="PATH_OR_NAME", help="Model to serve (--launch) or to request (default: the "
                                                        "server's first).")
@click.option("--arm", required=True, metavar="NAME", help="Label of this configuration, e.g. cuda-graphs.")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, metavar="PACKAGE",
              help="Throughput package to write.")
@click.option("--telemetry-output", type=click.Path(path_type=Path), metavar="PACKAGE",
              help="Telemetry package to write  [default: PACKAGE.telemetry]")
@click.option("--prompt-tokens", type=int, default=1024, metavar="N",
              help="Exact prompt length, counted by the server's tokenizer.")
@click.option("--filler", default="the", metavar="WORD", help="The word repeated after the marker.")
@click.option("--max-tokens", type=int, default=256, metavar="CAP", help="Output cap of every request (greedy).")
@click.option("--ignore-eos", is_flag=True, help="Decode to the cap even past an end-of-sequence token.")
@click.option("--concurrency", type=int, default=1, metavar="N", help="Requests in flight on each server.")
@click.option("--warmup-requests", type=int, default=2, metavar="N",
              help="Discarded requests per request loop before the first window.")
@click.option("--windows", type=int, default=3, metavar="W", help="Timed windows.")
@click.option("--window-s", type=float, default=60.0, metavar="S", help="Length of each window.")
@click.option("--stall-s", type=float, default=10.0, metavar="S",
              help="A window where no token arrives for this long is invalid; also the read timeout.")
@click.option("--request-timeout-s", type=float, default=600.0, metavar="S",
              help="Longest a warm-up request may stream (timed ones end with the last window).")
@click.option("--sample-hz", type=float, default=10.0, metavar="HZ", help="GPU counter readings per second.")
@click.option("--gpm-interval-s", type=float, default=0.5, metavar="S",
              help="Interval of the GPM metrics (>= 0.1: shorter ones read as zeros or NaN).")
@click.option("--no-gpm", is_flag=True, help="Do not read GPM metrics.")
@click.option("--no-telemetry", is_flag=True, help="Do not read GPU counters (no telemetry package).")
@click.option("--anchor", metavar="'CMD'",
              help="Measure the same server afterwards with this command (e.g. vllm bench serve); {url} {model} "
                   "{python} {prompt_tokens} {max_tokens} {result} {result_dir} {result_name} are filled in; "
                   "its result JSON at {result} is kept and compared.")
@click.option("--anchor-timeout", type=float, default=900.0, metavar="S", help="Time limit of the anchor command.")
@click.option("--hardware", metavar="TEXT", help="Hardware to record (default: the GPUs NVML names).")
@click.option("--id", "package_id", metavar="ID", help="Package id (default: from arm and content).")
@click.option("--force", is_flag=True, help="Replace existing output packages.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@subject_options(hardware=False)
def throughput(**o) -> int:
    """Measure decode throughput into a throughput package (and GPU counters into a telemetry package).

    A discarded warm-up, then W windows of S seconds with --concurrency streamed requests in flight per
    server; every token's arrival is timed from per-chunk usage. tok/s per window counts the tokens that
    arrived in it (time to first token included); see `audit bench report` for all figures.

    GPU evidence (GPU counters on and a GPU in sight) must say what it measured: --model-name,
    --weights and --run, with --model-config (default: MODEL/config.json), --engine (default: the
    version the server reports) and --hardware (default: the GPUs NVML names); else it is refused
    before the run. Both packages record it.
    """
    from audit.bench import store
    from audit.bench.throughput import BenchConfig, hardware_of, run
    from audit.subject import args_from, check_launch_weights, gpus_visible, resolve_subject

    flags = args_from(o)
    flags = dataclasses.replace(flags, hardware=o["hardware"])
    model_dir = Path(o["model"]) if o["model"] else None
    default_config = model_dir / "config.json" if model_dir is not None and model_dir.is_dir() else None
    gpu_evidence = not o["no_telemetry"] and gpus_visible() > 0
    check_launch_weights(o["launch"], flags.weights)
    # refused before the run; the server's version and NVML's names are filled in after it
    resolve_subject(flags, what="throughput", gpu_evidence=gpu_evidence, default_config=default_config,
                    default_engine="vllm==from-the-server", default_hardware="from NVML")

    cfg = BenchConfig(
        arm=o["arm"], prompt_tokens=o["prompt_tokens"], max_tokens=o["max_tokens"], ignore_eos=o["ignore_eos"],
        concurrency=o["concurrency"], warmup_requests=o["warmup_requests"], windows=o["windows"],
        window_s=o["window_s"], stall_s=o["stall_s"], request_timeout_s=o["request_timeout_s"], filler=o["filler"],
        servers=tuple(o["servers"]),
        launch=o["launch"], launch_program=o["launch_program"], launch_timeout=o["launch_timeout"],
        model=o["model"], telemetry=not o["no_telemetry"], sample_hz=o["sample_hz"],
        gpm_interval_s=o["gpm_interval_s"], gpm=not o["no_gpm"], anchor=o["anchor"],
        anchor_timeout=o["anchor_timeout"], hardware=o["hardware"], package_id=o["package_id"])
    problems = cfg.problems()
    if problems:
        raise click.UsageError(problems[0])
    out: Path = o["out"]
    tel_out = None if o["no_telemetry"] else (o["telemetry_output"] or store.telemetry_path(out))
    store.check_outputs(out, tel_out, o["force"])
    # Ctrl-C, `kill -INT` (even with SIGINT inherited ignored) and SIGTERM (a `timeout`, a job scheduler)
    # stop the run alike: the launched server is stopped.
    with procs.stop_signals_interrupt():
        result = run(cfg, log=None if o["quiet"] else sys.stderr, work_parent=out.parent)
    versions = sorted({str(s["version"]) for s in result.servers if s.get("version")})
    try:
        subject = resolve_subject(flags, what="throughput", gpu_evidence=gpu_evidence or bool(hardware_of(result)),
                                  default_config=default_config,
                                  default_engine=f"vllm=={versions[0]}" if len(versions) == 1 else None,
                                  default_hardware=hardware_of(result))
        tp, tm = store.write(result, out, tel_out, force=o["force"], subject=subject)
    finally:
        if result.work is not None:
            shutil.rmtree(result.work, ignore_errors=True)
    with store.open_throughput(out) as t:
        s = t.summary
        valid = sum(w.valid for w in s.windows)
        mean = "-" if s.tok_s.mean is None else f"{s.tok_s.mean:.1f}"
        click.echo(f"wrote {out}: throughput package {tp.package_id}, {valid} of {len(s.windows)} windows valid, "
                   f"{mean} tok/s")
    if tm is not None:
        status = tm.provenance.extra.get("status")
        click.echo(f"wrote {tel_out}: telemetry package {tm.package_id}, counters {status}")
    return 0


@bench.command()
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare(a: Path, b: Path, as_json: bool) -> int:
    """Ratio of A's tok/s to B's, paired by window: mean ± 2·se and worst to best pair.

    Both packages' figures are recomputed from their rows first; a summary that differs from its rows
    is an error.
    """
    from audit.bench import figures, report, store
    from audit.fileio import dumps_pretty

    with store.open_throughput(a) as ta, store.open_throughput(b) as tb:
        c = figures.compare(ta.pkg.manifest.package_id, ta.summary, ta.extra.get("run", {}),
                            tb.pkg.manifest.package_id, tb.summary, tb.extra.get("run", {}))
    if as_json:
        click.echo(dumps_pretty(c.model_dump(mode="json")), nl=False)
    else:
        for line in report.compare_lines(c):
            click.echo(line)
    return 0


@bench.command("report")
@click.argument("package", type=click.Path(path_type=Path))
@click.option("--telemetry", "tel_path", type=click.Path(path_type=Path), metavar="PACKAGE",
              help="Telemetry package of the run  [default: PACKAGE.telemetry when it exists]")
@click.option("--png", type=click.Path(path_type=Path), metavar="FILE",
              help="Timeline to write  [default: PACKAGE-report.png]")
@click.option("--no-png", is_flag=True, help="Print the figures only.")
def report_cmd(package: Path, tel_path: Path | None, png: Path | None, no_png: bool) -> int:
    """Print a throughput run's figures (recomputed from its rows) and write a PNG timeline.

    The timeline shows tok/s per window, utilization.gpu (time any kernel ran) against GPM SM_UTIL and
    DRAM_BW_UTIL, and power.
    """
    from audit.bench import report, store

    with store.open_throughput(package) as t, ExitStack() as opened:
        found = store.find_telemetry(package, tel_path)
        tel = opened.enter_context(store.open_telemetry(found, t)) if found is not None else None
        for line in report.throughput_lines(t):
            click.echo(line)
        why = None if tel is not None else "no telemetry package beside it (give --telemetry)"
        for line in report.telemetry_lines(tel, why):
            click.echo(line)
        if not no_png:
            name = package.name
            for suffix in (".tar.gz", ".tgz"):
                name = name.removesuffix(suffix)
            out = png or package.with_name(f"{name}-report.png")
            report.timeline_png(t, tel, out, why_no_telemetry=why)
            click.echo(f"wrote {out}")
    return 0

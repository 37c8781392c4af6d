"""`audit generate`: responses from a vLLM server into a responses package."""

from __future__ import annotations

import sys
from pathlib import Path
from re import Pattern
from typing import Any

import click

from audit import ascii_numbers
from audit.cli.app import cli


class _Number(click.ParamType):
    """click's INT or FLOAT, written in ASCII only: Python's int() and float() read "٣" as 3 and
    "1_000" as 1000, so a look-alike digit would pass as a number nobody typed."""

    def __init__(self, base: click.ParamType, pattern: Pattern[str]):
        self.base, self.name = base, base.name
        self._pattern = pattern

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not self._pattern.fullmatch(value):
            self.fail(f"{value!r} is not {'an integer' if self.name == 'integer' else 'a number'} "
                      "in ASCII digits", param, ctx)
        return self.base.convert(value, param, ctx)


INT = _Number(click.INT, ascii_numbers.INT)
FLOAT = _Number(click.FLOAT, ascii_numbers.FLOAT)

SAMPLING_OPTIONS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
                    "frequency_penalty", "min_tokens", "stop")
FIXED_ON_RESUME = ("benchmark", "items", "model", "launch", "launch_program", "served_model_name", "mode", "prompt",
                   "max_tokens", "samples", "seed", "resample_truncated", "resample_budget", "limit", "server_logs",
                   "no_log_check", "hardware", "package_id", "use_model_defaults", "force", *SAMPLING_OPTIONS)


@cli.command(context_settings={"show_default": True})
@click.option("--benchmark", metavar="NAME", help="Benchmark: mmlu_pro, gpqa_diamond, math500, ... (picks the prompt).")
@click.option("--items", type=click.Path(path_type=Path), metavar="ITEMS",
              help="Items package (or a responses package holding item rows).")
@click.option("--model", metavar="PATH_OR_NAME", help="Model path (as served) or served model name.")
@click.option("--server", "servers", multiple=True, metavar="URL",
              help="A running OpenAI-compatible server; repeat to share the work between servers.")
@click.option("--launch", metavar="'ARGS'",
              help="Start vLLM's OpenAI server (`vllm serve`) with these arguments, e.g. '--max-model-len 4096 "
                   "--enforce-eager' (or a whole 'vllm serve MODEL ...' line); stop it at the end.")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), metavar="PACKAGE",
              help="Responses package to write (its work directory is PACKAGE.work until it is done).")
@click.option("--resume", "resume_pkg", type=click.Path(path_type=Path), metavar="PACKAGE",
              help="Continue the unfinished run of PACKAGE with its recorded settings.")
@click.option("--mode", type=click.Choice(["chat", "completion"]), default="chat",
              help="Chat endpoint (the server's chat template) or completions endpoint (the raw prompt).")
@click.option("--prompt", metavar="NAME[@VERSION]", help="Prompt template (default: the benchmark's).")
@click.option("--max-tokens", type=INT, metavar="CAP",
              help="Output ceiling; each request gets min(CAP, context window - prompt tokens).")
@click.option("--temperature", type=FLOAT, help="Sampling temperature (required: nothing is left to defaults).")
@click.option("--top-p", type=FLOAT, default=1.0)
@click.option("--top-k", type=INT, default=0, help="0 disables top-k.")
@click.option("--min-p", type=FLOAT, default=0.0)
@click.option("--repetition-penalty", type=FLOAT, default=1.0)
@click.option("--presence-penalty", type=FLOAT, default=0.0)
@click.option("--frequency-penalty", type=FLOAT, default=0.0)
@click.option("--min-tokens", type=INT, default=0)
@click.option("--stop", multiple=True, metavar="STRING", help="Stop string (repeatable).")
@click.option("--use-model-defaults", is_flag=True,
              help="Take sampling parameters not given here from the model's generation_config.json "
                   "(as vLLM would) and send them explicitly.")
@click.option("--seed", type=INT, default=0, help="Base seed; a request's seed is SEED + attempt*K + sample.")
@click.option("--samples", type=INT, default=1, metavar="K", help="Responses per item, each with its own seed.")
@click.option("--resample-truncated", type=INT, default=0, metavar="N",
              help="Re-run responses cut at the ceiling up to N times, keeping every attempt.")
@click.option("--resample-budget", type=INT, metavar="TOKENS", help="Output ceiling of the re-runs.")
@click.option("--limit", type=INT, metavar="N", help="Only the first N items.")
@click.option("--concurrency", type=INT, default=1,
              help="Requests in flight at once on each server (1 for measurement runs).")
@click.option("--retries", type=INT, default=4, help="Retries of a failed request (with backoff).")
@click.option("--retry-backoff", type=FLOAT, default=0.5, metavar="S",
              help="Wait before the first retry; each further retry waits twice as long.")
@click.option("--request-timeout", type=FLOAT, default=3600.0, metavar="S",
              help="Seconds one request may take in all (connect, headers, the whole stream; a read gets as "
                   "long): a request past it is cut, its row records the error, and the run goes on.")
@click.option("--launch-timeout", type=FLOAT, default=900.0, metavar="S",
              help="Seconds to wait for a launched server's /health.")
@click.option("--launch-program", default="{python} -m vllm.entrypoints.openai.api_server", metavar="CMD",
              help="The command that starts the server ({python}: this interpreter).")
@click.option("--served-model-name", metavar="NAME", help="Model name to request (default: found in /v1/models).")
@click.option("--server-log", "server_logs", multiple=True, type=click.Path(path_type=Path), metavar="FILE",
              help="Log of a --server started with --enable-log-requests: check each request's applied parameters.")
@click.option("--no-log-check", is_flag=True,
              help="Do not compare the server log's applied sampling parameters with those sent (recorded).")
@click.option("--hardware", metavar="TEXT", help="Hardware to record (default with --launch: from nvidia-smi).")
@click.option("--id", "package_id", metavar="ID", help="Package id (default: derived from content).")
@click.option("--force", is_flag=True, help="Replace PACKAGE (and any unfinished run of it).")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.pass_context
def generate(ctx: click.Context, **o) -> int:
    """Generate responses on a vLLM server and write a responses package.

    Every sampling parameter is sent with every request and recorded; prompt tokens are counted by the
    server (/tokenize) so that max_tokens = min(CAP, context window - prompt tokens) exactly, and items whose
    prompt does not fit are recorded as excluded. Rows are journaled as they finish: after a crash,
    `audit generate --resume PACKAGE` continues where it stopped.
    """
    from audit.errors import AuditError
    from audit.generate.config import RunConfig, Runtime, Sampling
    from audit.generate.runner import resume, start

    rt = Runtime(concurrency=o["concurrency"], retries=o["retries"], request_timeout=o["request_timeout"],
                 launch_timeout=o["launch_timeout"], progress=not o["quiet"], backoff_s=o["retry_backoff"])
    if o["concurrency"] < 1 or o["retries"] < 0 or o["retry_backoff"] < 0:
        raise click.UsageError("--concurrency must be >= 1, --retries and --retry-backoff >= 0")
    given = {name for name in o if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE}

    if o["resume_pkg"] is not None:
        bad = sorted(name for name in FIXED_ON_RESUME if name in given)
        if o["out"] is not None and o["out"] != o["resume_pkg"]:
            bad.append("output")
        if bad:
            raise click.UsageError(f"--resume continues a run with its recorded settings; drop "
                                   f"{', '.join('--' + b.replace('_', '-') for b in bad)}")
        manifest = resume(o["resume_pkg"], rt, servers=tuple(o["servers"]), log=sys.stderr)
        out = o["resume_pkg"]
    else:
        missing = [f"--{n.replace('_', '-')}" for n in ("benchmark", "items", "model", "out", "max_tokens")
                   if o[n] is None]
        if missing:
            raise click.UsageError(f"missing {', '.join(m if m != '--out' else '-o PACKAGE' for m in missing)}")
        if o["temperature"] is None and not o["use_model_defaults"]:
            raise click.UsageError("give --temperature (or --use-model-defaults): nothing is left to server defaults")
        if o["servers"] and o["launch"]:
            raise click.UsageError("give --server or --launch, not both")
        if not o["servers"] and not o["launch"]:
            raise click.UsageError("give --server URL or --launch ARGS")
        if o["server_logs"] and not o["servers"]:
            raise click.UsageError("--server-log goes with --server (a launched server's log is read anyway)")
        sampling = Sampling(
            temperature=o["temperature"] if o["temperature"] is not None else 1.0,
            top_p=o["top_p"], top_k=o["top_k"], min_p=o["min_p"], repetition_penalty=o["repetition_penalty"],
            presence_penalty=o["presence_penalty"], frequency_penalty=o["frequency_penalty"],
            min_tokens=o["min_tokens"], stop=tuple(o["stop"]))
        cfg = RunConfig(
            benchmark=o["benchmark"], items=str(o["items"]), model=o["model"], sampling=sampling,
            max_tokens=o["max_tokens"], mode=o["mode"], prompt=o["prompt"], samples=o["samples"], seed=o["seed"],
            resample_truncated=o["resample_truncated"], resample_budget=o["resample_budget"], limit=o["limit"],
            servers=tuple(o["servers"]), launch=o["launch"], launch_program=o["launch_program"],
            served_model_name=o["served_model_name"], server_logs=tuple(str(p) for p in o["server_logs"]),
            log_check=not o["no_log_check"], hardware=o["hardware"], package_id=o["package_id"],
            use_model_defaults=o["use_model_defaults"])
        if o["use_model_defaults"] and o["temperature"] is None:
            from audit.generate.model_info import read_generation_config

            gen = read_generation_config(o["model"]) or {}
            if gen.get("temperature") is None:
                raise AuditError("the model has no generation_config.json temperature; give --temperature")
        manifest = start(o["out"], cfg, rt, force=o["force"], given=given, log=sys.stderr)
        out = o["out"]
    counts = manifest.provenance.extra.get("counts", {})
    shown = ", ".join(f"{k} {v}" for k, v in counts.items() if k not in ("rows", "attempts"))
    click.echo(f"wrote {out}: responses package {manifest.package_id}, {counts.get('rows', 0)} rows ({shown})")
    return 0

"""`audit floor` and `audit floor-check`: decode bandwidth floors from safetensors headers."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import cli
from audit.subject import subject_options


@cli.command("floor")
@click.argument("checkpoint", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, metavar="PACKAGE",
              help="checkpoint-headers package directory to write.")
@click.option("--gpus", type=int, default=1, show_default=True, metavar="N",
              help="GPUs the weights and caches are spread over.")
@click.option("--hbm-tbps", type=float, metavar="X", help="Memory bandwidth per GPU in TB/s (1e12 bytes/s).")
@click.option("--from-nvml", is_flag=True,
              help="Read the bandwidth of GPUs 0..N-1 through NVML: bus width x max memory clock x 2.")
@click.option("--context", type=int, default=0, show_default=True, metavar="T",
              help="Tokens already in the KV cache when the token is decoded.")
@click.option("--with-mtp", is_flag=True, help="Count MTP layers (weights and KV cache), once per step.")
@click.option("--engine-dtype", "engine_dtypes", multiple=True, metavar="ROLE=DTYPE",
              help="The engine holds ROLE's matrices in DTYPE (their scales drop out), e.g. attention=BF16; "
                   "also kv_cache=F8_E4M3, recurrent_state=F32. Repeatable.")
@click.option("--role-pattern", "role_patterns", multiple=True, metavar="ROLE=REGEX",
              help="Give ROLE to tensors whose name matches REGEX, before the role table's rules. Repeatable.")
@click.option("--roles", "role_table", default="default@2", show_default=True, metavar="NAME@VERSION",
              help="Role table to classify tensors with.")
@click.option("--id", "package_id", metavar="ID", help="Package id (default: derived from the content).")
@click.option("--force", is_flag=True, help="Replace PACKAGE if it exists.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the floor and the path written.")
@subject_options(weights=False)
def floor(checkpoint: Path, out: Path, gpus: int, hbm_tbps: float | None, from_nvml: bool, context: int,
          with_mtp: bool, engine_dtypes: tuple[str, ...], role_patterns: tuple[str, ...], role_table: str,
          package_id: str | None, force: bool, quiet: bool, **subject_flags) -> int:
    """Bandwidth floor of decoding one token with the checkpoint in CHECKPOINT (a directory).

    Reads config.json and only the safetensors headers (sharded through model.safetensors.index.json),
    never the weights; a header-only copy works the same. Prints bytes per token by role and dtype and
    the floor: bytes / (GPUs x bandwidth) as ms per token and tokens per second. Routed experts count
    experts_per_token / routed_experts, embeddings one row, MTP layers only with --with-mtp. Writes a
    checkpoint-headers package holding floor.json, the table and a header-only copy of the checkpoint
    (`audit floor-check PACKAGE` recomputes it). Bad headers are refused with one line, nothing written.

    With --from-nvml the floor is GPU evidence and must say what it is for: --model-name, --engine and
    --run (the config is the checkpoint's config.json unless --model-config names another, the hardware
    NVML's GPUs, the weights `headers-only` when the shards hold no data); with --hbm-tbps these are
    recorded when given.
    """
    from audit.floor import (
        FloorOptions,
        compute_floor,
        from_flag,
        parse_engine_dtype,
        parse_override,
        read_checkpoint,
        write_package,
    )
    from audit.floor import from_nvml as nvml
    from audit.floor.render import render
    from audit.outputs import check_output

    if (hbm_tbps is None) == (not from_nvml):
        raise click.UsageError("give one of --hbm-tbps X or --from-nvml")
    check_output(out, force=force)
    from audit.floor.compute import check_counts

    check_counts(gpus, context)
    opts = FloorOptions(gpus=gpus, context=context, with_mtp=with_mtp,
                        engine_dtypes=tuple(sorted(parse_engine_dtype(e) for e in engine_dtypes)),
                        role_table=role_table, role_overrides=tuple(parse_override(p) for p in role_patterns))
    from audit.subject import args_from, resolve_subject

    flags = args_from(subject_flags)
    config_file = checkpoint / "config.json"
    resolve_subject(flags, what="checkpoint-headers", gpu_evidence=from_nvml, default_config=config_file,
                    default_hardware="from NVML" if from_nvml else None, weights="headers-only")
    ckpt = read_checkpoint(checkpoint)
    bandwidth = from_flag(hbm_tbps) if hbm_tbps is not None else nvml(gpus)
    names = sorted({d.name for d in bandwidth.ref.devices}) if bandwidth.ref.source == "nvml" else []
    weights = "headers-only" if all(s.file_bytes == len(s.header_only) for s in ckpt.shards) else "checkpoint"
    subject = resolve_subject(flags, what="checkpoint-headers", gpu_evidence=from_nvml, default_config=config_file,
                              default_hardware=f"{len(bandwidth.ref.devices)}x {' + '.join(names)}" if names else None,
                              weights=weights)
    report = compute_floor(ckpt, bandwidth, opts)
    lines = render(report)
    for line in lines if not quiet else [x for x in lines if x.startswith(("floor:", "note:"))]:
        click.echo(line)
    pid = write_package(ckpt, report, out, package_id=package_id, overwrite=force, subject=subject)
    click.echo(f"wrote {out}: checkpoint-headers package {pid}")
    return 0


@cli.command("floor-check")
@click.argument("package", type=click.Path(path_type=Path))
def floor_check(package: Path) -> int:
    """Recompute a floor PACKAGE from its header-only checkpoint copy; exit 0 only if identical.

    Uses the recorded options, role table (refused if its published rules changed) and bandwidth.
    """
    from audit.floor import open_floor

    result = open_floor(package)
    if result.identical:
        click.echo(f"identical: {package}")
        return 0
    click.echo(f"differs: {package} ({len(result.differences)} differences)")
    for line in result.differences:
        click.echo(f"  {line}")
    return 1

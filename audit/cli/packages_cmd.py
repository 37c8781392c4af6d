"""Commands on raw packages: pack, validate, show, bundle, schemas."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from audit.cli.app import benchmark_option, cli
from audit.errors import printable
from audit.fileio import jsonl_source
from audit.pack import Table, build_package, load_provenance
from audit.packages import bundle, digest_scope, open_package

if TYPE_CHECKING:
    from audit.models import Subject


@cli.command()
@click.argument("out_dir", type=click.Path(path_type=Path))
@click.option("--kind", type=click.Choice(["responses", "items"]), default="responses", show_default=True,
              help="Package kind.")
@benchmark_option("Benchmark spec recorded in the manifest (see `audit benchmarks`), e.g. mmlu_pro.")
@click.option("--responses", "responses", type=click.Path(path_type=Path), metavar="R.jsonl",
              help="Responses: JSONL rows {item_id, sample, response, finish_reason, ...}.")
@click.option("--items", "items", type=click.Path(path_type=Path), metavar="I.jsonl",
              help="Items: JSONL rows {item_id, reference, choices, subject, protected}.")
@click.option("--provenance", type=click.Path(path_type=Path), metavar="P.json",
              help="Provenance JSON: model, engine, hardware, dataset, sampling as sent.")
@click.option("--id", "package_id", metavar="ID",
              help="Package id (default: derived from kind, benchmark and content).")
@click.option("--gzip", "use_gzip", is_flag=True, help="Store data files as .jsonl.gz.")
@click.option("--force", is_flag=True, help="Replace OUT_DIR if it exists and is a package (or empty).")
def pack(out_dir: Path, kind: str, benchmark: str | None, responses: Path | None, items: Path | None,
         provenance: Path | None, package_id: str | None, use_gzip: bool, force: bool) -> int:
    """Build a package in OUT_DIR from plain JSONL files.

    Every row is checked against its schema first; on any problem nothing is written.
    """
    ext = ".jsonl.gz" if use_gzip else ".jsonl"
    tables = []
    if kind == "responses" and responses is None:
        raise click.UsageError("--kind responses needs --responses R.jsonl")
    if kind == "items" and responses is not None:
        raise click.UsageError("--kind items takes --items only")
    if responses is not None:
        tables.append(Table("responses" + ext, "response_row.v1", jsonl_source(responses)))
    if items is not None:
        tables.append(Table("items" + ext, "item_row.v1", jsonl_source(items)))
    if not tables:
        raise click.UsageError("give --items I.jsonl")
    manifest = build_package(out_dir, kind=kind, tables=tables, benchmark=benchmark,
                             provenance=load_provenance(provenance), package_id=package_id, overwrite=force)
    rows = sum(f.rows or 0 for f in manifest.files)
    click.echo(f"wrote {out_dir}: {manifest.kind} package {manifest.package_id}, "
               f"{len(manifest.files)} files, {rows} rows")
    return 0


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
def validate(path: Path) -> int:
    """Check a package: manifest schema, every file's sha256 and size, every row, path safety.

    Exit 0 when valid; exit 1 with one line per problem (file, row, field).
    """
    from audit.packages.layout import digest_scope, package_digest
    from audit.packages.validate import unpacked, validate_tree

    if path.is_dir() and not (path / "manifest.json").exists() and (path / "release" / "manifest.json").is_file():
        from audit.release.models import release_package_dir  # (only then: the release package loads a lot)

        if (inner := release_package_dir(path)) != path:
            click.echo(f"note: {path} is a Hugging Face dataset folder (audit release --format hf): validating "
                       f"{inner}")
            path = inner

    # One validation: "valid" and the digest it prints describe the bytes that were checked (a second
    # pass could read files swapped in after the first).
    with unpacked(path) as (root, problems):
        m = None
        if not problems:
            m, problems = validate_tree(root)
    if problems:
        prefix = f"{path}/" if path.is_dir() else f"{path}:"
        for p in problems:
            click.echo(f"{prefix}{p}" if p.path else f"{path}: {printable(p.message)}")
        click.echo(f"invalid: {len(problems)} problem{'s' if len(problems) != 1 else ''}", err=True)
        return 1
    assert m is not None
    rows = sum(f.rows or 0 for f in m.files)
    click.echo(f"valid: {m.kind} package {m.package_id}, {len(m.files)} files, {rows} rows, "
               f"digest {package_digest(m)}")
    if (scope := digest_scope(m)) is not None:
        click.echo(f"note: {scope}")
    return 0


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
def show(path: Path) -> int:
    """Summarise a package or a verdict file.

    A package (validated first, then read back by its kind, which recomputes what can be recomputed and
    refuses a mismatch): kind, counts, provenance and hashes, and what it holds: responses and items, a
    release's figures, a profile's steps and kernels, a throughput package's tok/s, a floor. A verdict file
    (results.json): what was graded and how, the figures, per-subject figures and the rules that fired.
    """
    from audit.errors import AuditError
    from audit.importers.detect import VERDICT_FILE, sniff

    if path.is_file() and not path.name.endswith((".tar.gz", ".tgz")):
        found = sniff(path)
        if found is VERDICT_FILE:
            from audit.views import verdict_file_view

            for line in verdict_file_view(path):
                click.echo(line)
            return 0
        if found is not None and found.key != "package":
            raise AuditError(f"not a package or a verdict file: {found.message(path)}", path=str(path))
        raise AuditError("not a package or a verdict file: expected a package directory, a .tar.gz or a "
                         "verdict file", path=str(path))
    from audit.packages.kinds import get_kind

    with open_package(path) as pkg:
        m = pkg.manifest
        kind = get_kind(m.kind)
        contents = kind.show(kind.read(pkg))  # read (and recomputed) before anything is printed
        echo = click.echo
        echo(f"package    {m.package_id}")
        echo(f"kind       {m.kind}" + (f" ({m.benchmark})" if m.benchmark else ""))
        echo(f"created    {m.created}")
        prod = m.producer
        commit = f" {prod.git_commit[:12]}{'+dirty' if prod.git_dirty else ''}" if prod.git_commit else ""
        echo(f"producer   {prod.tool} {prod.version}{commit}")
        echo(f"digest     {pkg.digest}" + (" (old scheme: file paths and hashes only)"
                                               if digest_scope(m) is not None else ""))
        pv = m.provenance
        if m.unpinned_provenance is not None:  # never read as the package's: shown, and said to be unverified
            pv = m.unpinned_provenance
            echo(f"provenance unverified: the digest of a schema_version {m.schema_version} manifest does not "
                 f"cover it")
        for label, value in (("model", pv.model), ("engine", " ".join(x for x in (pv.engine, pv.engine_version) if x)),
                             ("hardware", pv.hardware), ("source", pv.source)):
            if value:
                echo(f"{label:<10} {value}")
        if pv.subject is not None:
            echo(f"subject    {subject_line(pv.subject)}")
        if pv.dataset:
            d = pv.dataset
            bits = [d.name] + [f"{k}={v}" for k, v in (("split", d.split), ("revision", d.revision),
                                                       ("sha256", d.sha256)) if v]
            echo(f"dataset    {' '.join(bits)}")
        if pv.sampling:
            echo("sampling   " + ", ".join(f"{k}={v}" for k, v in pv.sampling.items()))
        echo("files")
        for f in m.files:
            rows = f"{f.rows} rows" if f.rows is not None else "-"
            echo(f"  {f.path:<28} {f.schema_:<16} {rows:>12} {f.bytes:>12} B  sha256 {f.sha256[:16]}")
        for line in contents:
            echo(line)
    return 0


@cli.command("bundle")
@click.argument("pkg_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, metavar="OUT.tar.gz",
              help="Tarball to write.")
@click.option("--force", is_flag=True, help="Replace OUT.tar.gz if it exists and is a bundled package.")
def bundle_cmd(pkg_dir: Path, output: Path, force: bool) -> int:
    """Write a validated package directory as a reproducible .tar.gz."""
    from audit.outputs import check_output

    if not output.name.endswith((".tar.gz", ".tgz")):
        raise click.UsageError("the output must end in .tar.gz or .tgz")
    check_output(output, force=force, kind="bundle")
    bundle(pkg_dir, output, overwrite=force)
    click.echo(f"wrote {output}")
    return 0


@cli.command()
@click.option("--write", "mode", flag_value="write", help="Regenerate schemas/*.json from the models.")
@click.option("--check", "mode", flag_value="check", default=True, help="Exit 1 if schemas/ differs from the models.")
def schemas(mode: str) -> int:
    """Generate or check the JSON Schema files in schemas/."""
    from audit import schemas as sch

    if mode == "write":
        for name in sch.write():
            click.echo(f"wrote schemas/{name}")
        return 0
    bad = sch.check()
    for name in bad:
        click.echo(f"schemas/{name}: out of date (run `audit schemas --write`)")
    if not bad:
        click.echo(f"schemas/ in sync ({len(sch.expected_files())} files)")
    return 1 if bad else 0


def subject_line(s: Subject) -> str:
    """One line naming what the evidence measured: model and config, engine, hardware, weights, run."""
    config = f"config sha256 {s.model_config_sha256[:16]}" if s.model_config_sha256 else \
        f"config unknown: {s.model_config_unknown}"
    weights = {"random": "random weights (--load-format dummy: nothing that depends on their values says anything "
                         "about the model)",
               "checkpoint": "the published weights", "headers-only": "no weights (safetensors headers only)"}
    return (f"{s.model} ({config}); {s.engine}=={s.engine_version} on {s.hardware}; "
            f"{weights.get(s.weights, s.weights)}; run {s.run}")

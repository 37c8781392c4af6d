"""`audit import arena-hard`: (audit.importers.arena_hard)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from audit.cli.imports.common import import_group


@import_group.command("arena-hard")
@click.argument("src", type=click.Path(path_type=Path), metavar="MODEL.jsonl")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, metavar="CALLS",
              help="judge-calls package to write.")
@click.option("--force", is_flag=True, help="Replace CALLS if it exists.")
def import_arena_hard(src: Path, out: Path, force: bool) -> int:
    """An Arena-Hard model_judgment file: both games of each question, the verdict regex re-run on the judgment
    text; the score from both orderings (`audit show CALLS`).
    """
    from audit.importers.arena_hard import import_arena_hard
    from audit.judge.imports import write_imported
    from audit.outputs import check_output

    check_output(out, force=force)
    imp = import_arena_hard(str(src))
    write_imported(imp, str(out), questions=None, force=force)
    statuses = Counter(r.status for r in imp.rows)
    click.echo(f"wrote {out}: {len(imp.rows):,} judge calls from {imp.source.name} ("
               + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items())) + ")")
    return 0

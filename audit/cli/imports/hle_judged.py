"""`audit import hle-judged`: (audit.importers.hle_judged)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from audit.cli.imports.common import import_group


@import_group.command("hle-judged")
@click.argument("src", type=click.Path(path_type=Path), metavar="judged_NAME.json")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, metavar="CALLS",
              help="judge-calls package to write.")
@click.option("--questions", type=click.IntRange(1), metavar="N",
              help="Questions of the dataset (upstream's n; default: the file's entries).")
@click.option("--force", is_flag=True, help="Replace CALLS if it exists.")
def import_hle_judged(src: Path, out: Path, questions: int | None, force: bool) -> int:
    """HLE's judged JSON: the parsed fields only ("raw response not recorded"); HLE's figures over --questions N
    (upstream divides by every question of the dataset).
    """
    from audit.importers.hle_judged import import_hle_judged
    from audit.judge.imports import write_imported
    from audit.outputs import check_output

    check_output(out, force=force)
    imp = import_hle_judged(str(src))
    write_imported(imp, str(out), questions=questions, force=force)
    statuses = Counter(r.status for r in imp.rows)
    click.echo(f"wrote {out}: {len(imp.rows):,} judge calls from {imp.source.name} ("
               + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items())) + ")")
    return 0

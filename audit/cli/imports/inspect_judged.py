"""`audit import inspect-judged`: (audit.importers.inspect_judged)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from audit.cli.imports.common import import_group


@import_group.command("inspect-judged")
@click.argument("src", type=click.Path(path_type=Path), metavar="LOG.eval|LOG.json")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, metavar="CALLS",
              help="judge-calls package to write.")
@click.option("--force", is_flag=True, help="Replace CALLS if it exists.")
def import_inspect_judged(src: Path, out: Path, force: bool) -> int:
    """inspect_ai logs with model-graded scores: each sample's grader call (its model event) as a judge call, the
    grade pattern re-run on the grader's completion.
    """
    from audit.importers.inspect_judged import import_inspect_judged
    from audit.judge.imports import write_imported
    from audit.outputs import check_output

    check_output(out, force=force)
    imp = import_inspect_judged(str(src))
    write_imported(imp, str(out), questions=None, force=force)
    statuses = Counter(r.status for r in imp.rows)
    click.echo(f"wrote {out}: {len(imp.rows):,} judge calls from {imp.source.name} ("
               + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items())) + ")")
    return 0

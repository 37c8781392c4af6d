"""`audit import inspect-judged`: (audit.importers.inspect_judged)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.imports.common import calls_options, import_group, write_calls


@import_group.command("inspect-judged")
@click.argument("src", type=click.Path(path_type=Path), metavar="LOG.eval|LOG.json")
@calls_options()
def import_inspect_judged(src: Path, out: Path, fmt: str | None, force: bool) -> int:
    """inspect_ai logs with model-graded scores: each sample's grader call (its model event) as a judge call, the
    grade pattern re-run on the grader's completion.
    """
    from audit.importers.inspect_judged import import_inspect_judged

    return write_calls(lambda: import_inspect_judged(str(src), fmt), out, force=force)

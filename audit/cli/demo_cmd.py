"""`audit demo`: the README's main command."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import cli


@cli.command()
@click.option("--packages", type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
              help="Demo packages (default: the bundled packages/demo-lab-note).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("out/demo"),
              show_default=True, metavar="DIR", help="Where the verdict files, diffs and release go (replaced).")
def demo(packages: Path | None, out: Path) -> int:
    """Recompute the lab note's figures from the bundled raw packages and list every verdict that changed.

    For each benchmark: import the lab's recorded verdicts, regrade with the current extractor and
    grader, and diff the two; then release the protected GPQA grading with a leak check.
    """
    from audit.demo import DEFAULT_PACKAGES, run_demo

    for line in run_demo(packages or DEFAULT_PACKAGES, out):
        click.echo(line)
    return 0

"""`audit import hle-judged`: (audit.importers.hle_judged)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.imports.common import calls_options, import_group, write_calls


@import_group.command("hle-judged")
@click.argument("src", type=click.Path(path_type=Path), metavar="judged_NAME.json")
@calls_options(click.option("--questions", type=click.IntRange(1), metavar="N",
                            help="Questions of the dataset (upstream's n; default: the file's entries)."))
def import_hle_judged(src: Path, out: Path, questions: int | None, fmt: str | None, force: bool) -> int:
    """HLE's judged JSON: the parsed fields only ("raw response not recorded"); HLE's figures over --questions N
    (upstream divides by every question of the dataset).
    """
    from audit.importers.hle_judged import import_hle_judged

    return write_calls(lambda: import_hle_judged(str(src), fmt), out, force=force, questions=questions)

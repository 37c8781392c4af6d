"""`audit import arena-hard`: (audit.importers.arena_hard)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.imports.common import calls_options, import_group, write_calls


@import_group.command("arena-hard")
@click.argument("src", type=click.Path(path_type=Path), metavar="MODEL.jsonl")
@calls_options()
def import_arena_hard(src: Path, out: Path, fmt: str | None, force: bool) -> int:
    """An Arena-Hard model_judgment file: both games of each question, the verdict regex re-run on the judgment
    text; the score from both orderings (`audit show CALLS`).
    """
    from audit.importers.arena_hard import import_arena_hard

    return write_calls(lambda: import_arena_hard(str(src), fmt), out, force=force)

"""`audit import alpaca-eval`: (audit.importers.alpaca_eval)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.imports.common import calls_options, import_group, write_calls


@import_group.command("alpaca-eval")
@click.argument("src", type=click.Path(path_type=Path), metavar="annotations.json")
@calls_options(click.option("--seed", type=int, default=0, show_default=True,
                            help="The annotator's seed (its swap rule's)."))
def import_alpaca_eval(src: Path, out: Path, seed: int, fmt: str | None, force: bool) -> int:
    """AlpacaEval's annotations.json: every preference re-derived from the judge's top logprobs, the swap bit
    recomputed by the evaluator's seeded rule; win rate and SE as the leaderboard computes them, from the
    re-derived and from the recorded preferences (`audit show CALLS`).
    """
    from audit.importers.alpaca_eval import import_alpaca_eval

    return write_calls(lambda: import_alpaca_eval(str(src), seed=seed, fmt=fmt), out, force=force)

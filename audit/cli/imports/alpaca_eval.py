"""`audit import alpaca-eval`: (audit.importers.alpaca_eval)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from audit.cli.imports.common import import_group


@import_group.command("alpaca-eval")
@click.argument("src", type=click.Path(path_type=Path), metavar="annotations.json")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, metavar="CALLS",
              help="judge-calls package to write.")
@click.option("--seed", type=int, default=0, show_default=True, help="The annotator's seed (its swap rule's).")
@click.option("--force", is_flag=True, help="Replace CALLS if it exists.")
def import_alpaca_eval(src: Path, out: Path, seed: int, force: bool) -> int:
    """AlpacaEval's annotations.json: every preference re-derived from the judge's top logprobs, the swap bit
    recomputed by the evaluator's seeded rule; win rate and SE as the leaderboard computes them, from the
    re-derived and from the recorded preferences (`audit show CALLS`).
    """
    from audit.importers.alpaca_eval import import_alpaca_eval
    from audit.judge.imports import write_imported
    from audit.outputs import check_output

    check_output(out, force=force)
    imp = import_alpaca_eval(str(src), seed=seed)
    write_imported(imp, str(out), questions=None, force=force)
    statuses = Counter(r.status for r in imp.rows)
    click.echo(f"wrote {out}: {len(imp.rows):,} judge calls from {imp.source.name} ("
               + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items())) + ")")
    return 0

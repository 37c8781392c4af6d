"""`audit compare-runs A B`: two task-run packages paired by task (audit.taskruns.compare)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import cli


@cli.command("compare-runs")
@click.argument("a", type=click.Path(path_type=Path), metavar="A")
@click.argument("b", type=click.Path(path_type=Path), metavar="B")
@click.option("--by", type=click.Choice(["duration", "turns"]), default="duration", show_default=True,
              help="Per-task duration, or duration per agent turn.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the bootstrap interval (recorded beside it).")
@click.option("--resamples", type=click.IntRange(min=100, max=1_000_000), default=10_000, show_default=True,
              help="Bootstrap resamples.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Text for people; JSON (schemas/task_runs_comparison.v1.json) holds every pair.")
@click.option("--max-items", type=click.IntRange(min=0), default=40, show_default=True, metavar="N",
              help="Tasks printed in text; JSON always holds all.")
def compare_runs(a: Path, b: Path, by: str, seed: int, resamples: int, fmt: str, max_items: int) -> int:
    """Compare task-run packages A and B task by task: the ratio A/B of each task's median duration (or
    duration per turn) over its repetitions, their geometric mean with a t interval on the logs and a seeded
    bootstrap interval, tasks censored in either arm left out (counted), outcome changes task by task, and
    each run's tasks per hour from its recorded wall clock and workers, flagged when workers ≥ tasks.
    """
    from audit.fileio import dumps_pretty
    from audit.taskruns import compare, render
    from audit.taskruns.package import open_task_runs

    with open_task_runs(a) as ra, open_task_runs(b) as rb:
        c = compare.compare((str(a), ra.runs, ra.trials), (str(b), rb.runs, rb.trials), by=by,  # type: ignore[arg-type]
                            seed=seed, resamples=resamples)
    if fmt == "json":
        click.echo(dumps_pretty(c.model_dump(mode="json")), nl=False)
    else:
        click.echo("\n".join(render.comparison_lines(c, max_pairs=max_items)))
    return 0

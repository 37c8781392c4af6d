"""`audit diff`: compare two verdict files, list every figure that fell or rose; exit 0 same, 1 changed, 2 error."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import cli, echo_problems
from audit.errors import ValidationFailed


@cli.command("diff")
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True,
              help="Markdown for people; JSON (schemas/diff_report.v1.json) holds every changed row.")
@click.option("--max-items", type=click.IntRange(min=0), default=20, show_default=True, metavar="N",
              help="Rows printed per cause (and per one-sided list) in Markdown; JSON always holds all.")
@click.option("--allow-different-responses", is_flag=True,
              help="Compare files that grade different responses packages (the header says so).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="Write the report to FILE instead of stdout.")
@click.option("--force", is_flag=True,
              help="Replace FILE if it exists and is a report of `audit diff` or `audit verify`.")
def diff(old: Path, new: Path, fmt: str, max_items: int, allow_different_responses: bool,
         output: Path | None, force: bool) -> int:
    """Compare two verdict files OLD and NEW: every figure that changed and every row whose verdict changed.

    Figures that fell are retractions; figures that rose are upward revisions. Per-subject figures
    come from the files' subjects (MMLU-Pro categories); rows are listed in natural order of their
    ids (q2 before q10), and each extractor rule they name is explained. Rows are aligned by
    (item_id, sample). Each changed row gets a cause: response, policy, reference, extractor or
    grader (first that applies, in that order; see audit/diff/compare.py), or inconsistent when both
    files name the same components, policies and inputs and the verdict still differs (tampered or
    non-deterministic: never a retraction).
    Two task-runs packages (folders) are compared trial by trial instead: each run's resolved rate and
    every trial (task, run, attempt) whose outcome changed.
    Exit 0 when nothing changed, 1 when something did, 2 on error — like diff(1).
    """
    from audit.diff import diff_files, render_json, render_markdown
    from audit.errors import AuditError
    from audit.outputs import check_output, write_text

    if output is not None:
        if not output.resolve().parent.is_dir():
            raise AuditError("parent directory does not exist", path=str(output))
        check_output(output, force=force, kind="report")
    if _task_runs(old) and _task_runs(new):
        return _diff_task_runs(old, new, fmt, max_items, output, force)
    try:
        report = diff_files(old, new, allow_different_responses=allow_different_responses)
    except ValidationFailed as e:
        echo_problems(e)
        return 2  # a file that fails validation is bad input: 1 means "the files differ" here
    text = render_json(report) if fmt == "json" else render_markdown(report, max_items=max_items)
    if output is not None:
        write_text(output, text, force=force, kind="report")
    else:
        click.echo(text, nl=False)
    return 1 if report.has_changes else 0


def _task_runs(p: Path) -> bool:
    # Two task-run packages (folders holding a manifest) are diffed trial by trial; anything else is a verdict file.
    return p.is_dir() and (p / "manifest.json").is_file()


def _diff_task_runs(old: Path, new: Path, fmt: str, max_items: int, output: Path | None, force: bool) -> int:
    from audit.fileio import dumps_pretty
    from audit.outputs import write_text
    from audit.taskruns import compare, render
    from audit.taskruns.package import open_task_runs

    with open_task_runs(old) as a, open_task_runs(new) as b:
        d = compare.diff(a.pkg.manifest.package_id, (a.runs, a.trials, a.summary),
                         b.pkg.manifest.package_id, (b.runs, b.trials, b.summary))
    text = dumps_pretty(d.model_dump(mode="json")) if fmt == "json" else \
        "\n".join(render.diff_lines(d, max_items)) + "\n"
    if output is not None:
        write_text(output, text, force=force, kind="report")
    else:
        click.echo(text, nl=False)
    return 1 if d.has_changes else 0

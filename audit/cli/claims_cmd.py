"""Commands on claims ledgers: verify, claims page, claims recipes."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import cli


@cli.command("verify")
@click.argument("ledger", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Text for people; JSON (schemas/verify_report.v1.json) for programs.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="Write the report to FILE instead of stdout.")
@click.option("--force", is_flag=True,
              help="Replace FILE if it exists and is a report of `audit verify` or `audit diff`.")
def verify_cmd(ledger: Path, fmt: str, output: Path | None, force: bool) -> int:
    """Recompute every claim of a LEDGER (claims.yaml) from its pinned packages.

    Validates every package and checks its content digest, checks every file's sha256, then
    recomputes each claim with its recipe and prints: id, recorded, recomputed, survives. A claim
    that does not survive is explained; for verdict-based claims with recorded verdicts, with the
    items whose verdict changed (as `audit diff` finds them).

    Exit 0 when every claim survives, 1 when any does not, 2 on a bad ledger.
    """
    from audit.claims.verify import render_json, render_text, verify
    from audit.errors import AuditError
    from audit.outputs import check_output, write_text

    if output is not None:
        if not output.resolve().parent.is_dir():
            raise AuditError("parent directory does not exist", path=str(output))
        check_output(output, force=force, kind="report")
    result = verify(ledger)
    text = render_json(result) if fmt == "json" else render_text(result)
    if output is not None:
        write_text(output, text, force=force, kind="report")
    else:
        click.echo(text, nl=False)
    return 0 if result.all_survive else 1


@cli.group("claims")
def claims_group() -> None:
    """Claims ledgers: render the measurements page, list the recipes."""


@claims_group.command("page")
@click.argument("ledger", type=click.Path(path_type=Path, dir_okay=False))
@click.option("-o", "--out", "out", type=click.Path(path_type=Path, file_okay=False), required=True, metavar="DIR",
              help="Directory for index.html, claims.md and the plots (claim-<id>.png).")
@click.option("--screenshot", is_flag=True,
              help="Also render the page in headless Chromium and save DIR/screenshot.png.")
def page_cmd(ledger: Path, out: Path, screenshot: bool) -> int:
    """Render the measurements page of a LEDGER: Markdown and static HTML, with a plot per claim.

    Every claim is recomputed first (as `audit verify` does); the page shows each claim's status,
    value, interval, whether it survives, and links to its packages. Exit 1 when a claim does not
    survive (the page is written and says so), 2 on a bad ledger.
    """
    from audit.claims.page import HTML_NAME, write_page
    from audit.claims.verify import verify

    result = verify(ledger)
    written = write_page(result, out)
    if screenshot:
        from audit.claims.browser import screenshot as shoot

        shoot(out / HTML_NAME, out / "screenshot.png")
        written.append("screenshot.png")
    click.echo(f"wrote {out}: {', '.join(written)}")
    click.echo(f"{result.survivors} of {len(result.claims)} claims survive")
    return 0 if result.all_survive else 1


@claims_group.command("recipes")
def recipes_cmd() -> int:
    """List the recipes a ledger can name, with their arguments and the unit of their value."""
    from audit.claims.registry import iter_recipe_help

    for line in iter_recipe_help():
        click.echo(line)
    return 0

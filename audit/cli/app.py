"""The `audit` group and what its commands share (`--benchmark`, one error line). Each command module
adds its commands to `cli` from here; `audit.cli` loads them and runs the group."""

from __future__ import annotations

import click

from audit import __version__
from audit.errors import AuditError, ValidationFailed, capped, printable

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT, no_args_is_help=True)
@click.version_option(__version__, "--version", prog_name="audit", message="%(prog)s %(version)s")
def cli() -> None:
    """Regrade, diff and release LLM evaluation results as verifiable artifacts."""


def _check_benchmark(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from audit.specs import SPECS

    if value not in SPECS:
        raise AuditError(f"--benchmark: unknown benchmark {value!r} (known: {', '.join(sorted(SPECS))}; "
                         f"`audit benchmarks` describes them)")
    return value


def benchmark_option(help: str, **kw):
    """`--benchmark NAME` as every command that records or grades one takes it: a registered spec name
    (`audit benchmarks`), checked before anything is read, so a package, a verdict file and a grading
    name benchmarks alike."""
    return click.option("--benchmark", metavar="NAME", callback=_check_benchmark, help=help, **kw)


def error_line(message: str) -> str:
    """One line, whatever the message holds (a newline in a file name is printed escaped)."""
    return f"audit: error: {capped(printable(message))}"


def echo_problems(e: ValidationFailed) -> None:
    """Print each problem of a failed validation as its own error line (on stderr)."""
    for p in e.problems:
        click.echo(error_line(str(p)), err=True)

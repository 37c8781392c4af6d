"""The `audit` command line. The library raises; this layer turns errors into one line and an exit code.

Exit codes: 0 success; 1 a check found problems (validate, diff found changes,
reproduce differs); 2 bad input or a refused operation; 130 interrupted.
"""

from __future__ import annotations

import sys

import click

from audit.cli.app import CONTEXT, benchmark_option, cli, echo_problems, error_line
from audit.errors import AuditError, ValidationFailed

__all__ = ["CONTEXT", "benchmark_option", "cli", "echo_problems", "error_line", "main", "run"]


def _load_commands() -> None:
    # Each module adds its commands to `cli`; one module per area.
    from audit.cli import (
        bench_cmd,  # noqa: F401
        claims_cmd,  # noqa: F401
        demo_cmd,  # noqa: F401
        diff_cmd,  # noqa: F401
        extract_cmd,  # noqa: F401
        floor_cmd,  # noqa: F401
        generate_cmd,  # noqa: F401
        grade_cmd,  # noqa: F401
        import_cmd,  # noqa: F401
        judge_cmd,  # noqa: F401
        packages_cmd,  # noqa: F401
        release_cmd,  # noqa: F401
        taskruns_cmd,  # noqa: F401
        trace_cmd,  # noqa: F401
    )


_NO_ARGS_IS_HELP: type[click.UsageError] | tuple[type[click.UsageError], ...] = getattr(
    click.exceptions, "NoArgsIsHelpError", ())
"""Click >= 8.2 raises this for a group called without a command; 8.1 prints the help itself and exits 0."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    _load_commands()
    try:
        rv = cli.main(args=argv, prog_name="audit", standalone_mode=False)
    except ValidationFailed as e:
        echo_problems(e)
        return e.exit_code
    except AuditError as e:
        click.echo(error_line(str(e)), err=True)
        return e.exit_code
    except _NO_ARGS_IS_HELP as e:
        # `audit` (or `audit import`) alone asks for the help: print it as --help does, exit 0.
        click.echo(e.ctx.get_help() if e.ctx is not None else e.format_message())
        return 0
    except click.UsageError as e:
        click.echo(error_line(e.format_message().replace("\n", " ")), err=True)
        return 2
    except click.ClickException as e:
        click.echo(error_line(e.format_message().replace("\n", " ")), err=True)
        return e.exit_code
    except (click.Abort, KeyboardInterrupt):
        click.echo(error_line("interrupted"), err=True)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as e:  # a file no command could read or write (full disk, missing directory): one line
        where = f"{e.filename}: " if e.filename else ""
        click.echo(error_line(f"{where}{e.strerror or e}"), err=True)
        return 2
    return rv if isinstance(rv, int) else 0


def run() -> None:
    sys.exit(main())

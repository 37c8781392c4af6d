"""The CLI's contract: --version, --help on every command, one-line errors with exit 2."""

from __future__ import annotations

import pytest

from audit import __version__
from audit.cli import _load_commands, cli

_load_commands()
COMMANDS = sorted(cli.commands)


def test_version(cli):
    r = cli("--version")
    assert (r.code, r.out, r.err) == (0, f"audit {__version__}\n", "")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(cli, command):
    r = cli(command, "--help")
    assert r.code == 0
    assert r.out.startswith(f"Usage: audit {command} ")
    assert r.err == ""


def test_unknown_command_is_one_line_exit_2(cli):
    r = cli("frobnicate")
    assert r.code == 2
    assert r.out == ""
    assert r.err == "audit: error: No such command 'frobnicate'.\n"


def test_missing_option_is_one_line_exit_2(cli, tmp_path):
    r = cli("grade", tmp_path)
    assert r.code == 2
    assert r.err.count("\n") == 1 and r.err.startswith("audit: error: Missing option")


def test_missing_package_is_one_line(cli, tmp_path):
    r = cli("validate", tmp_path / "nope")
    assert r.code == 2
    assert r.err == f"audit: error: {tmp_path / 'nope'}: no such file or directory\n"


HEAVY = ("numpy", "pandas", "pyarrow", "matplotlib", "scipy", "sympy", "latex2sympy2_extended", "jsonschema", "yaml",
         "pynvml", "math_verify")


def test_loading_every_command_imports_no_heavy_library():
    # Every command module is imported whenever the CLI starts (`audit pack` included): a library that only one
    # command needs is imported inside that command, or every command pays its import time and memory.
    import subprocess
    import sys

    code = ("import json, sys; from audit.cli import _load_commands; _load_commands(); "
            f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, "[]\n", "")


def test_loading_every_command_imports_no_grading_module():
    # The resolver, the verdict files, the registries and the prompts are for the commands that use them
    # (`audit extract`, `audit judge`, ...), not for `audit --help` or `audit pack`.
    import subprocess
    import sys

    grading = ("audit.specs", "audit.verdicts", "audit.graders", "audit.extractors", "audit.prompts")
    code = ("import json, sys; from audit.cli import _load_commands; _load_commands(); "
            f"print(json.dumps(sorted(m for m in {grading!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, "[]\n", "")


def test_audit_alone_prints_the_help_exit_0(cli):
    # It printed the whole help folded onto one line, labelled as an error, with exit 2.
    r = cli()
    assert (r.code, r.err) == (0, "")
    assert r.out == cli("--help").out
    assert r.out.splitlines()[:3] == ["Usage: audit [OPTIONS] COMMAND [ARGS]...", "",
                                      "  Regrade, diff and release LLM evaluation results as verifiable artifacts."]
    assert "\n  diff " in r.out and "\n  grade " in r.out


def test_a_command_group_alone_prints_its_help_exit_0(cli):
    r = cli("import")
    assert (r.code, r.err) == (0, "")
    assert r.out == cli("import", "--help").out
    assert r.out.startswith("Usage: audit import [OPTIONS] COMMAND [ARGS]...\n\n  Build packages from result files")

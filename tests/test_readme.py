"""The README checked against the real CLI, as sqlite-utils checks its docs: every `audit ...` command it names
(the command table, the shell blocks, inline code) exists with every option it uses, the benchmark specs it lists
are the registered ones, and the demo block is `audit demo`'s real output."""

from __future__ import annotations

import re

import click
import pytest

from audit.cli import _load_commands, cli
from audit.demo import DEFAULT_PACKAGES
from audit.specs import SPECS
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
_load_commands()


def _table_commands() -> list[str]:
    """The command column of the "How it works" table, one `audit ...` span at a time."""
    lines = README.split("| step | command | writes |\n")[1].split("\n\n")[0].splitlines()[1:]
    spans = [span for line in lines for span in re.findall(r"`([^`]+)`", line.split(" | ")[1])]
    return [s for span in spans for s in _alternatives(span) if s.startswith("audit ")]


def _alternatives(span: str) -> list[str]:
    """`audit import mmlu-pro / lm-eval / table` names three commands."""
    head, *others = span.split(" / ")
    return [head] + [head.rsplit(" ", 1)[0] + " " + alt for alt in others]


def _fenced_blocks() -> list[tuple[str, str]]:
    """(info string, text) of every fenced code block."""
    blocks: list[tuple[str, str]] = []
    info: str | None = None
    lines: list[str] = []
    for line in README.splitlines(keepends=True):
        if line.startswith("```"):
            if info is None:
                info, lines = line[3:].strip(), []
            else:
                blocks.append((info, "".join(lines)))
                info = None
        elif info is not None:
            lines.append(line)
    return blocks


def _all_invocations() -> list[str]:
    """Every `audit ...` command line in the README: inline code and the lines of shell blocks."""
    prose = "".join(re.split(r"(?m)^```.*?^```", README, flags=re.S))
    found = [a for s in re.findall(r"`([^`\n]+)`", prose) if re.match(r"audit [a-z]", s) for a in _alternatives(s)]
    for _, block in (b for b in _fenced_blocks() if b[0] == "bash"):
        for line in block.splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("audit "):
                found.append(line)
    return sorted(set(found))


def _resolve(invocation: str) -> tuple[click.Command, list[str]]:
    """The command an invocation names and its remaining words, as click itself parses them (a group's
    default subcommand included); fails on an unknown command."""
    words = invocation.split()[1:]
    command: click.Command = cli
    while isinstance(command, click.Group):
        ctx = click.Context(command, resilient_parsing=True)
        command.parse_args(ctx, list(words))
        protected = list(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", None) or [])
        if not protected or protected[0] not in command.commands:
            pytest.fail(f"README names `{invocation}`: no such command")
        command, words = command.commands[protected[0]], protected[1:] + list(ctx.args)
    return command, words


def _options(command: click.Command) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"-h", "--help"}


def test_the_table_names_the_commands_people_use():
    table = _table_commands()
    for name in ("audit import mmlu-pro", "audit import lm-eval", "audit import table", "audit grade", "audit diff",
                 "audit show", "audit release", "audit reproduce"):
        assert any(t == name or t.startswith(name + " ") for t in table), name


@pytest.mark.parametrize("invocation", sorted(set(_table_commands()) | set(_all_invocations())))
def test_every_command_and_option_the_readme_uses_exists(invocation):
    command, words = _resolve(invocation)
    known = _options(command)
    used = [w.strip("[](),").split("=")[0] for w in words if w.strip("[](),").startswith("-")]
    unknown = [o for o in used if o not in known]
    assert unknown == [], f"`{invocation}`: {command.name} has no option {', '.join(unknown)}"


def test_the_resolver_refuses_what_does_not_exist():
    with pytest.raises(pytest.fail.Exception):
        _resolve("audit frobnicate --now")
    command, words = _resolve("audit import mmlu-pro SRC --recorded r.json")
    assert command.name == "mmlu-pro" and "--recorded" in _options(command)
    assert "--nope" not in _options(command)


def test_the_benchmark_specs_listed_are_the_registered_ones():
    paragraph = README.split("Benchmarks specs (`audit benchmarks`):")[1].split("Any part can be overridden")[0]
    names = {s for s in re.findall(r"`([^`]+)`", paragraph) if re.fullmatch(r"[a-z][a-z0-9_]*", s)}
    assert names == set(SPECS)


def test_the_demo_block_is_the_real_output_of_audit_demo(cli, tmp_path, monkeypatch):
    block = next(text for info, text in _fenced_blocks() if text.startswith("audit demo:"))
    monkeypatch.chdir(tmp_path)
    r = cli("demo", "--out", "out/demo")
    assert (r.code, r.err) == (0, "")
    # `make demo` runs from the repository root, where the packages' path prints relative.
    assert r.out.replace(str(DEFAULT_PACKAGES), "packages/demo-lab-note") == block

"""Errors the library raises. The CLI turns each into one line and an exit code."""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pydantic


def printable(text: str) -> str:
    """`text` with control, format and line-separator characters escaped (`\\n`, `\\u200b`), so a name
    read from input cannot break an output line in two or hide in it."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch == " " or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp", "Zs"):
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


MAX_ERROR_CHARS = 2000
"""Longest error line printed: a longer one (a 100,000-character argument echoed) keeps its start and end."""


def capped(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """`text` cut to about `limit` characters: its first half and last quarter, saying how much was left out."""
    if len(text) <= limit:
        return text
    head, tail = text[:limit // 2], text[-(limit // 4):]
    return f"{head}[... {len(text) - len(head) - len(tail):,} characters left out ...]{tail}"


def key_repr(key: str) -> str:
    """How an error shows a key of a closed vocabulary (a policy, a flag value): `repr`, or when the key is not
    ASCII its `ascii()` form, so a look-alike (Cyrillic а for a) is told from the key it imitates."""
    return repr(key) if key.isascii() else f"{ascii(key)} (not ASCII)"


def one_line(e: BaseException) -> str:
    """The first line of an exception's message (its type's name when the message is empty)."""
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def short_repr(v: Any) -> str:
    """`repr(v)`, cut to 60 characters (57 and `...`): how an error message shows a value."""
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


@dataclass(frozen=True, slots=True)
class FieldError:
    """One pydantic error in words: the field it is at and what is wrong there."""

    loc: tuple[str | int, ...]
    """Where, as pydantic gives it (`("files", 0, "path")`)."""
    message: str
    """`missing required field`, `unknown field`, or pydantic's message and the value it got."""

    @property
    def field(self) -> str | None:
        """The location dotted (`files.0.path`); None for an error of the whole document."""
        return ".".join(str(p) for p in self.loc) or None


def error_words(error: Mapping[str, Any], noun: str = "field", *, quiet: Collection[str] = ()) -> str:
    """One pydantic error (an entry of `ValidationError.errors()`) in words: `missing required {noun}`,
    `unknown {noun}`, or its message (without pydantic's `Value error, `) followed by the value it got, cut
    to 60 characters: not for a mapping, nor for the error types in `quiet`, whose message says what was wrong
    (or whose value must not be quoted)."""
    kind = error["type"]
    if kind == "missing":
        return f"missing required {noun}"
    if kind == "extra_forbidden":
        return f"unknown {noun}"
    msg = str(error["msg"]).removeprefix("Value error, ")
    got = error.get("input")
    if kind not in quiet and not isinstance(got, Mapping):
        msg += f" (got {short_repr(got)})"
    return msg


def field_errors(err: pydantic.ValidationError, noun: str = "field", *,
                 quiet: Collection[str] = ()) -> list[FieldError]:
    """Every error of `err` in words (`error_words`), in pydantic's order: the one formatter of a pydantic
    error, for every reader that turns one into a line."""
    return [FieldError(tuple(e["loc"]), error_words(e, noun, quiet=quiet)) for e in err.errors(include_url=False)]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input: where (file, row, field) and what."""

    path: str
    message: str
    row: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = [printable(self.path)]
        if self.row:  # (rows count from 1: row 0 is a whole-file problem, named by the file alone)
            where.append(f"row {self.row}")
        if self.field:
            where.append(f"field {printable(self.field)}")
        return f"{': '.join(where)}: {printable(self.message)}"


class AuditError(Exception):
    """A user-facing error: bad input, a refused operation. Exit code 2."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, row: int | None = None,
                 field: str | None = None):
        self.problem = Problem(path or "", message, row, field)
        super().__init__(str(self.problem) if path else message)


class ValidationFailed(AuditError):
    """A package or file failed validation; `problems` lists every finding. Exit code 1."""

    exit_code = 1

    def __init__(self, target: str, problems: list[Problem]):
        self.target = target
        self.problems = problems
        first = problems[0] if problems else "no details"
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        super().__init__(f"{first}{more}")

"""The importer catalog: each importer module declares its name, the file formats it recognises and its command.

As inspect_ai's recorders do, an importer says what it reads where it is written: its module calls
`register_importer(Importer(...))` with the formats it knows (how to tell one from a first record or a
whole JSON document, the command that reads it, what `audit import verdicts` should say instead), and the
module of its `audit import NAME` command. `audit.importers.detect` loops over the catalog; the CLI loads
each importer's command module from it. A new importer is three files: its module here, its command in
`audit/cli/imports/`, and its test.

This module imports nothing from the importers themselves: they import it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.registry import Catalog, catalog

RecordTest = Callable[[set[str]], bool]
"""Whether a table whose first record has these field names is in a format."""
DocumentTest = Callable[[dict[str, Any]], bool]
"""Whether a whole JSON document (its top-level object) is in a format."""


@dataclass(frozen=True)
class Format:
    """A recognised file format and what reads it."""

    key: str
    """Short id, e.g. `lm-eval-samples`."""
    what: str
    """What the file is, in words: "an lm-evaluation-harness --log_samples file"."""
    use: str
    """The command that reads it (FILE stands for the file)."""
    importer: str | None = None
    """The `audit import` subcommand that reads it, when one does."""
    after: str = ""
    """Words after the command, e.g. which file to give it."""
    order: int = 500
    """Detection tries formats by ascending order (the more specific first), then by key."""
    record: RecordTest | None = None
    """Recognises a table by the field names of its first record (None: not a table format)."""
    document: DocumentTest | None = None
    """Recognises a whole JSON document by its top level (None: not a document format)."""
    suffixes: tuple[str, ...] = ()
    """File names ending so (lower case) are this format without reading a record..."""
    file_test: Callable[[Path], bool] | None = None
    """... when this holds for the regular file (None: by the name alone)."""
    tabular: bool = True
    """Whether `audit import table` may read a file of this format with a mapping (False: it is no table)."""
    verdicts_hint: str = ""
    """What `audit import verdicts` says instead after "this looks like WHAT" (FILE for the file); empty: the
    format's own message."""
    beside: Callable[[Path], list[Path]] | None = None
    """The files the same run wrote beside this one, which `use` reads instead (in place of `instead`)."""
    instead: str = ""
    """The placeholder in `use` that a file found `beside` replaces."""
    beside_what: str = ""
    """What a file found `beside` is, in words ("--log_samples file")."""

    def message(self, path: str | os.PathLike[str], fmt: str | None = None) -> str:
        """One line: what the file looks like and the command to use (with `--format fmt` when one was given: a
        name without the extension needs it there too)."""
        use, after = self.use, self.after
        others = self.beside(Path(path)) if self.beside is not None else []
        if others:
            use = use.replace(self.instead, "FILE")
            after = (f" (the {self.beside_what} written beside it)" if len(others) == 1 else
                     f" (one of the {len(others)} {self.beside_what}s written beside it: "
                     + ", ".join(p.name for p in others) + ")")
            path, fmt = others[0], None
        given = f"{path} --format {fmt}" if fmt else str(path)
        return f"this looks like {self.what}; use `{use.replace('FILE', given)}`{after}"


def recorded_hint(command: str) -> str:
    """`Format.verdicts_hint` for a format whose run's own verdicts `command` writes as a verdict file."""
    return f"; its run's own verdicts: `{command}` (writes the responses package and the verdict file)"


@dataclass(frozen=True)
class Importer:
    """One `audit import NAME` command and the formats its module recognises."""

    name: str
    """The subcommand: `audit import NAME`."""
    command: str
    """The module that defines the command (under `audit.cli.imports`), imported when the CLI loads."""
    formats: tuple[Format, ...]
    """Every format this module recognises (some read by another command, e.g. a results file)."""
    fields: frozenset[str] | None = None
    """Fields of which this importer's input has at least one in its first record (else it is another table);
    None: any table may be meant."""


IMPORTERS: Catalog[Importer] = catalog("importer", homes=("audit.importers",))
"""Every importer, by its subcommand name, in the order its modules register."""


def register_importer(importer: Importer, home: str) -> Importer:
    """Register `importer` from module `home` (pass `__name__`); DuplicateError for a name given twice."""
    return IMPORTERS.add(importer.name, importer, home=home)


def all_formats() -> list[Format]:
    """Every format the registered importers recognise, in detection order."""
    return sorted((f for imp in IMPORTERS.values() for f in imp.formats), key=lambda f: (f.order, f.key))

"""Builders for small packages in tests (never for the real data, which is read in place)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

from audit.pack import SourceRow, Table, build_package


def rows_source(rows: list[dict[str, Any]], label: str = "test") -> list[SourceRow]:
    return [SourceRow(label, i + 1, r) for i, r in enumerate(rows)]


def make_package(path: Path, *, responses: list[dict[str, Any]] | None = None,
                 items: list[dict[str, Any]] | None = None, benchmark: str = "test",
                 kind: str | None = None, package_id: str | None = None) -> Path:
    """Write a package holding the given response and/or item rows; returns its path."""
    tables = []
    if responses is not None:
        tables.append(Table("responses.jsonl", "response_row.v1", rows_source(responses, "responses")))
    if items is not None:
        tables.append(Table("items.jsonl", "item_row.v1", rows_source(items, "items")))
    build_package(path, kind=kind or ("responses" if responses is not None else "items"), tables=tables,
                  benchmark=benchmark, package_id=package_id)
    return path


def load_source(folder: Path, name: str, source: str) -> ModuleType:
    """`source` (dedented) written to `folder` and imported as module `name`, registered in sys.modules
    (code fingerprints name the module and read its source file)."""
    path = folder / f"{name.replace('.', '_')}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod

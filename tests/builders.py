"""Builders for small packages in tests (never for the real data, which is read in place)."""

from __future__ import annotations

from pathlib import Path
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

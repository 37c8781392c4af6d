"""JSON Schema files in `schemas/`, generated from the pydantic models.

`audit schemas --write` regenerates them; `audit schemas --check` (and a test)
fails when a committed file differs from what the models generate, so users
without Python can validate every artifact with the JSON Schema alone.

A file is named by the version of the document it describes (`manifest.v2.json` for a manifest of
`schema_version` 2): a change to what a version may hold is a new version and a new file, beside the
old one. Files no model generates any more stay, byte for byte, in `FROZEN`.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from audit.fileio import sha256_bytes
from audit.models import MANIFEST_SCHEMA_VERSION, Manifest
from audit.registry import Catalog, catalog

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
SCHEMA_BASE_URI = "https://audit.invalid/schemas/"

MANIFEST_SCHEMA_ID = f"manifest.v{MANIFEST_SCHEMA_VERSION}"
"""The schema file of the manifest this audit writes, named by its `schema_version`."""

FROZEN = {"manifest.v1.json": "7875ebe9ffab2e8e77b9f7f9765f1a754794953dc46936f18ed3facaf028942e",
          "manifest.v2.json": "a105d4c837af4db1891d5184388a0bd476c68d6d5bf0695586126bd1dc717558",
          "release_info.v1.json": "027ba32150f5f279e5f992e87b027ac32136afc3335c09eb1c96c8b1782848a6"}
"""Published schema files that no model generates any more, by sha256: kept as published so a tool that fetched
one by its `$id` still finds it. (`manifest.v1.json` was generated from the one manifest model while it wrote
version 2, with the kinds of its day as an enum; `manifest.v2.json` names the version and leaves the kinds to
the registry; `manifest.v3.json` adds `provenance.subject`, what GPU evidence measured; `release_info.v1.json`
is release.json before a release holding protected items was structural, `release_info.v2.json` adds
`structure`.)"""

SCHEMAS: Catalog[type[BaseModel]] = catalog("schema")
"""Schemas of documents that belong to no package kind (diff reports, claim ledgers, comparisons),
registered by the modules in `REPORT_MODULES` on import. A package kind's schemas (its rows, documents
and summaries) come from its `Kind` (`audit.packages.kinds`)."""

REPORT_MODULES = ("audit.diff", "audit.claims.ledger", "audit.claims.verify", "audit.bench.figures",
                  "audit.trace.models")
"""Modules that register report schemas on import (`register`): diff reports, claim ledgers and verify
reports, `audit bench compare`'s comparison, `audit trace diff`'s report. (A module may also register a
schema its package kind lists: it must be the same model.)"""


def register(schema_id: str, model: type[BaseModel]) -> None:
    """Add a document model (verdict file, diff report, ...) to the generated set."""
    SCHEMAS.add(schema_id, model)


def _load_all() -> None:
    import importlib

    for mod in REPORT_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


def documents() -> dict[str, type[BaseModel]]:
    """Every schema file's model, by id (`schemas/<id>.json`): the manifest, every package kind's schemas and
    every registered report; DuplicateError when two models claim one id."""
    from audit.packages.kinds import kind_schemas
    from audit.registry import duplicate_error

    _load_all()
    out: dict[str, type[BaseModel]] = {MANIFEST_SCHEMA_ID: Manifest}
    for sid, model in (*kind_schemas().items(), *SCHEMAS.items()):
        if out.setdefault(sid, model) is not model:
            raise duplicate_error("schema", repr(sid))
    return out


def generate(schema_id: str) -> str:
    """The JSON Schema text of `schema_id`."""
    return _text(schema_id, documents()[schema_id])


def _text(schema_id: str, model: type[BaseModel]) -> str:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    doc = {"$schema": "https://json-schema.org/draft/2020-12/schema",
           "$id": f"{SCHEMA_BASE_URI}{schema_id}.json", **schema}
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def expected_files() -> dict[str, str]:
    """Every schema file's name and text."""
    docs = documents()
    return {f"{sid}.json": _text(sid, docs[sid]) for sid in sorted(docs)}


def write(directory: Path = SCHEMA_DIR) -> list[str]:
    """Regenerate every schema file; remove stale ones. Returns the names written."""
    directory.mkdir(parents=True, exist_ok=True)
    files = expected_files()
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    for stale in directory.glob("*.json"):
        if stale.name not in files and stale.name not in FROZEN:
            stale.unlink()
    return sorted(files)


def check(directory: Path = SCHEMA_DIR) -> list[str]:
    """Names of schema files that are missing, stale or differ from the models, and of frozen files that are
    missing or changed."""
    files = expected_files()
    bad = [name for name, text in files.items()
           if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != text]
    bad += [name for name, digest in FROZEN.items()
            if not (directory / name).is_file() or sha256_bytes((directory / name).read_bytes()) != digest]
    bad += [p.name for p in directory.glob("*.json") if p.name not in files and p.name not in FROZEN]
    return sorted(bad)

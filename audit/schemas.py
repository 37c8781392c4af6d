"""JSON Schema files in `schemas/`, generated from the pydantic models.

`audit schemas --write` regenerates them; `audit schemas --check` (and a test)
fails when a committed file differs from what the models generate, so users
without Python can validate every artifact with the JSON Schema alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from audit.models import ROW_MODELS, Manifest

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
SCHEMA_BASE_URI = "https://audit.invalid/schemas/"

DOCUMENTS: dict[str, type[BaseModel]] = {"manifest.v1": Manifest, **ROW_MODELS}
"""Every schema file, by id: `schemas/<id>.json`."""


def register(schema_id: str, model: type[BaseModel]) -> None:
    """Add a document model (verdict file, diff report, ...) to the generated set."""
    if schema_id in DOCUMENTS and DOCUMENTS[schema_id] is not model:
        raise ValueError(f"schema {schema_id!r} is already registered")
    DOCUMENTS[schema_id] = model


def _load_all() -> None:
    # Modules that define further documents register them on import.
    import importlib

    for mod in ("audit.verdicts", "audit.diff", "audit.release", "audit.floor.report", "audit.claims.ledger",
                "audit.claims.verify", "audit.bench.figures", "audit.bench.telemetry", "audit.trace.models"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


def generate(schema_id: str) -> str:
    model = DOCUMENTS[schema_id]
    schema = model.model_json_schema(by_alias=True, mode="validation")
    doc = {"$schema": "https://json-schema.org/draft/2020-12/schema",
           "$id": f"{SCHEMA_BASE_URI}{schema_id}.json", **schema}
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def expected_files() -> dict[str, str]:
    _load_all()
    return {f"{sid}.json": generate(sid) for sid in sorted(DOCUMENTS)}


def write(directory: Path = SCHEMA_DIR) -> list[str]:
    """Regenerate every schema file; remove stale ones. Returns the names written."""
    directory.mkdir(parents=True, exist_ok=True)
    files = expected_files()
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    for stale in directory.glob("*.json"):
        if stale.name not in files:
            stale.unlink()
    return sorted(files)


def check(directory: Path = SCHEMA_DIR) -> list[str]:
    """Names of schema files that are missing, stale or differ from the models."""
    files = expected_files()
    bad = [name for name, text in files.items()
           if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != text]
    bad += [p.name for p in directory.glob("*.json") if p.name not in files]
    return sorted(bad)

"""Generic importer: any JSONL / JSON / CSV / Parquet table, mapped column by column onto a row schema.

Field values come from, in order: `--map FIELD=EXPR`, `--const FIELD=VALUE`,
then (for `sample`) `--sample-from COL` or the `--explode` index, and last a
source column named like the field. Text is converted to the field's type when
that is lossless (CSV cells, templates); anything else is left for the row
schema to reject.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from audit.errors import AuditError
from audit.importers import Output, data_file, import_provenance
from audit.importers.formats import Format, Importer, register_importer
from audit.importers.mapping import (
    Expr,
    ExprError,
    as_text,
    coerce,
    field_types,
    parse_maps,
    select_where,
    split_assignment,
)
from audit.importers.sources import TABLE_SUFFIXES, SourceFile, iter_table_records, source_file
from audit.models import Provenance
from audit.pack import SourceRow, Table
from audit.packages import ROW_KEYS
from audit.packages.kinds import ROW_MODELS

INT_TO_TEXT = ("item_id", "reference")
"""Fields where an integer column is taken as its decimal text (ids, numeric answers); elsewhere
an integer where text belongs is an error, not a silent conversion."""

PSEUDO_COLUMNS = ("_row", "_index")
"""Columns every record has: its row number in the source, and its element index under --explode."""


@dataclass(frozen=True)
class TableSpec:
    """How source columns become rows of one schema."""

    kind: str
    maps: dict[str, Expr] = field(default_factory=dict)
    consts: dict[str, str] = field(default_factory=dict)
    where: tuple[tuple[str, str, bool], ...] = ()
    explode: tuple[str, ...] = ()
    sample_from: str | None = None
    keep_extra: bool = False
    drop: tuple[str, ...] = ()
    dedupe: bool = False

    @property
    def schema(self) -> str:
        return data_file(self.kind, False)[1]

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "map": {k: e.text for k, e in self.maps.items()},
            "const": dict(self.consts),
            "where": [f"{c}{'!=' if neg else '='}{v}" for c, v, neg in self.where],
            "explode": list(self.explode),
            "sample_from": self.sample_from,
            "keep_extra": self.keep_extra,
            "drop": list(self.drop),
            "dedupe": self.dedupe,
        }


def parse_spec(kind: str, *, maps: tuple[str, ...] = (), consts: tuple[str, ...] = (),
               where: tuple[str, ...] = (), explode: tuple[str, ...] = (), sample_from: str | None = None,
               keep_extra: bool = False, drop: tuple[str, ...] = (), dedupe: bool = False) -> TableSpec:
    """Check options against the target schema; raise AuditError naming the bad option."""
    schema = data_file(kind, False)[1]
    model = ROW_MODELS[schema]
    fields = [f for f in model.model_fields if f != "extra"]

    def target(opt: str, name: str) -> str:
        if name.startswith("extra."):
            if not name[len("extra."):]:
                raise AuditError(f"{opt} {name}: name the key, e.g. extra.pred")
            return name
        if name not in fields:
            raise AuditError(f"{opt} {name}: not a field of {schema} (fields: {', '.join(fields)}, extra.KEY)")
        return name

    mapped = parse_maps(maps, target)
    constants: dict[str, str] = {}
    for text in consts:
        name, value, _ = split_assignment("--const", text)
        name = target("--const", name)
        if name in mapped or name in constants:
            raise AuditError(f"--const {name}: the field is already given")
        constants[name] = value
    filters = tuple(split_assignment("--where", t, allow_negation=True) for t in where)
    cols = tuple(c.strip() for group in explode for c in group.split(",") if c.strip())
    dropped = tuple(c.strip() for group in drop for c in group.split(",") if c.strip())
    if sample_from is not None:
        if "sample" not in fields:
            raise AuditError(f"--sample-from: {schema} rows have no sample field")
        if "sample" in mapped or "sample" in constants:
            raise AuditError("--sample-from: sample is already given by --map or --const")
        if cols:
            raise AuditError("--sample-from and --explode both number samples; map sample explicitly "
                             "(e.g. --map sample=_index) to combine them")
    return TableSpec(kind, mapped, constants, filters, cols, sample_from, keep_extra, dropped, dedupe)


class TableImport:
    """One source file read through a TableSpec; counts what it read, filtered and wrote."""

    def __init__(self, src: SourceFile, spec: TableSpec):
        self.src = src
        self.spec = spec
        self.model = ROW_MODELS[spec.schema]
        self.types = {f: field_types(self.model, f) for f in self.model.model_fields}
        self.required = [f for f, info in self.model.model_fields.items() if info.is_required()]
        self.keys = ROW_KEYS.get(spec.schema, ())
        self.samples: dict[str, int] = {}
        self.read = self.filtered = self.deduped = self.written = 0
        mapped_cols = {c for e in spec.maps.values() for c in e.columns}
        self._used = mapped_cols | ({spec.sample_from} if spec.sample_from else set())

    def rows(self) -> Iterator[SourceRow]:
        spec = self.spec
        seen: dict[tuple[Any, ...], bytes] = {}
        for rec in iter_table_records(self.src):
            if rec.error is not None or rec.obj is None:
                yield SourceRow(rec.label, rec.row, None, rec.error or "unreadable record")
                continue
            self.read += 1
            obj = rec.obj
            if not self._selected(obj, rec.label, rec.row):
                self.filtered += 1
                continue
            for index, element in self._explode(obj, rec.label, rec.row):
                out = self._map(element, rec.label, rec.row, index)
                if spec.dedupe and self.keys:
                    key = tuple(out.get(k, 0 if k in ("sample", "attempt") else None) for k in self.keys)
                    digest = hashlib.sha256(json.dumps(out, sort_keys=True, default=str).encode()).digest()
                    if seen.get(key) == digest:
                        self.deduped += 1
                        continue
                    seen.setdefault(key, digest)
                self.written += 1
                yield SourceRow(rec.label, rec.row, out)

    def _selected(self, obj: dict[str, Any], label: str, row: int) -> bool:
        if not self.spec.where:
            return True
        return select_where(self.spec.where, obj, label, row)

    def _explode(self, obj: dict[str, Any], label: str, row: int) -> Iterator[tuple[int | None, dict[str, Any]]]:
        cols = self.spec.explode
        if not cols:
            yield None, obj
            return
        length = None
        for c in cols:
            if c not in obj:
                raise AuditError(f"--explode refers to missing column {c!r}", path=label, row=row, field=c)
            v = obj[c]
            if not isinstance(v, list):
                raise AuditError(f"--explode: column {c!r} is {type(v).__name__}, not a list",
                                 path=label, row=row, field=c)
            if length is None:
                length = len(v)
            elif len(v) != length:
                raise AuditError(f"--explode: lists differ in length ({cols[0]}: {length}, {c}: {len(v)})",
                                 path=label, row=row, field=c)
        for i in range(length or 0):
            element = dict(obj)
            for c in cols:
                element[c] = obj[c][i]
            yield i, element

    def _map(self, obj: dict[str, Any], label: str, row: int, index: int | None) -> dict[str, Any]:
        spec = self.spec
        record = dict(obj)
        record["_row"] = row
        if index is not None:
            record["_index"] = index
        out: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for name, expr in spec.maps.items():
            try:
                value = expr(record)
            except ExprError as e:
                raise AuditError(str(e), path=label, row=row, field=name) from None
            self._put(out, extra, name, value)
        for name, value in spec.consts.items():
            self._put(out, extra, name, value)
        used = set(self._used)
        if "sample" in self.types and "sample" not in out:
            if spec.sample_from:
                if spec.sample_from not in record:
                    raise AuditError(f"--sample-from refers to missing column {spec.sample_from!r}",
                                     path=label, row=row, field="sample")
                key = as_text(record[spec.sample_from])
                out["sample"] = self.samples.setdefault(key, len(self.samples))
            elif index is not None:
                out["sample"] = index
        # Columns named like a field fill it when nothing else did.
        for name in self.types:
            if name not in out and name != "extra" and name in obj:
                out[name] = coerce(obj[name], self.types[name], int_to_text=name in INT_TO_TEXT)
                used.add(name)
        if "choices" in self.types and "choices" not in out and "options" in obj and "options" not in used:
            # MMLU-Pro and its kin name the options `options`: read them, never drop them unsaid.
            out["choices"] = _options(obj["options"], label, row)
            used.add("options")
        if "extra" in obj and isinstance(obj["extra"], dict):
            used.add("extra")
            for k, v in obj["extra"].items():
                extra.setdefault(k, v)
        for name in self.required:
            if name not in out:
                raise AuditError(f"required field {name} is not mapped and the source has no column {name!r} "
                                 f"(use --map {name}=COLUMN)", path=label, row=row, field=name)
        if spec.keep_extra:
            for col, v in obj.items():
                if col not in used and col not in spec.drop:
                    extra.setdefault(col, v)
        if extra:
            out["extra"] = extra
        return out

    def _put(self, out: dict[str, Any], extra: dict[str, Any], name: str, value: Any) -> None:
        if name.startswith("extra."):
            extra[name[len("extra."):]] = value
        else:
            out[name] = coerce(value, self.types[name], int_to_text=name in INT_TO_TEXT)

    def provenance(self, base: Provenance | None, *, model: str | None, engine: str | None) -> Provenance:
        if not self.written:
            why = f" ({self.filtered} of {self.read} filtered out by --where)" if self.filtered else ""
            raise AuditError(f"no rows to import{why}", path=str(self.src.path))
        config = self.spec.as_json()
        if self.spec.sample_from:
            config["sample_from"] = {"column": self.spec.sample_from, "samples": dict(self.samples)}
        config["rows"] = {"read": self.read, "filtered_out": self.filtered, "duplicates_dropped": self.deduped,
                          "written": self.written}
        return import_provenance(base, files=[self.src], importer={"importer": "table", **config},
                                 model=model, engine=engine)


def table_output(src_path: str, out: Any, spec: TableSpec, *, gzip: bool = False, benchmark: str | None = None,
                 model: str | None = None, engine: str | None = None, provenance: Provenance | None = None,
                 package_id: str | None = None, fmt: str | None = None) -> tuple[Output, TableImport]:
    """The package one table import writes, and the import (for its counts once written); `fmt`: the table's
    format when its name does not tell it (see sources.format_name)."""
    src = source_file(src_path, TABLE_SUFFIXES, fmt)
    imp = TableImport(src, spec)
    rel, schema = data_file(spec.kind, gzip)
    output = Output(out, spec.kind, [Table(rel, schema, imp.rows())],
                    lambda: imp.provenance(provenance, model=model, engine=engine),
                    benchmark=benchmark, package_id=package_id)
    return output, imp


def _options(value: Any, label: str, row: int) -> list[str]:
    """An `options` column as the item's choices: a list of texts, or a mapping from the letters A, B, C, ... in
    order to texts (a dict-valued column was dropped without a word); anything else is one error line."""
    from audit.models import LETTERS

    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    if isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
        keys = list(value)
        if keys == list(LETTERS[:len(keys)]):
            return list(value.values())
        raise AuditError(f"the options column maps {', '.join(map(str, keys[:6]))} to texts: expected the letters "
                         f"A, B, C, ... in order (or --map choices=EXPR)", path=label, row=row, field="options")
    raise AuditError(f"the options column holds {type(value).__name__}, not a list of option texts (--map "
                     f"choices=EXPR, or --drop options with --keep-extra)", path=label, row=row, field="options")


_NO_VERDICTS = (", with no `correct` or `verdict` column; name the columns that hold them: `audit import verdicts "
                "FILE --benchmark NAME --map item_id=COLUMN --map correct=COLUMN -o OUT.json`, or grade its "
                "responses: `audit grade PACKAGE --benchmark NAME -o OUT.json`")
"""What `audit import verdicts` says of a table of responses: it holds no verdicts."""

TABLE = Format("table", "a table of unknown columns",
               "audit import table FILE --kind responses --map item_id=COLUMN --map response=COLUMN -o OUT", "table",
               order=1000, record=lambda keys: True, verdicts_hint=_NO_VERDICTS)
"""Any table nothing more specific recognises (tried last)."""

register_importer(Importer(
    "table", "audit.cli.imports.table",
    (Format("mmlu-pro-questions", "the MMLU-Pro question set (question_id, options, answer; no model text)",
            "audit import table FILE --kind items --map item_id=question_id --map reference=answer --map "
            "choices=options --map subject=category -o OUT", "table", order=31,
            record=lambda keys: {"question_id", "options", "answer"} <= keys, verdicts_hint=_NO_VERDICTS),
     Format("gpqa-responses", "GPQA responses by item_index and version (no question text)",
            "audit import table FILE --kind responses --map item_id=gpqa-{item_index:03d}-v{version} --sample-from "
            "model -o OUT", "table", order=40, record=lambda keys: {"item_index", "version", "response"} <= keys,
            verdicts_hint=_NO_VERDICTS),
     Format("response-rows", "audit response rows (item_id, response)", "audit pack OUT --responses FILE", "table",
            order=60, record=lambda keys: {"item_id", "response"} <= keys, verdicts_hint=_NO_VERDICTS),
     Format("item-rows", "audit item rows (item_id, reference)", "audit pack OUT --kind items --items FILE",
            "table", order=70, record=lambda keys: {"item_id", "reference"} <= keys),
     TABLE)), __name__)

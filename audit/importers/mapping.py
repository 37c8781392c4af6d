"""Column expressions and type conversion for mapping source records onto row schemas.

An expression is a column name (`question_id`) or a Python format template
(`gpqa-{item_index:03d}-v{version}`, `{doc[question_id]}`). Templates may index
into objects with `[key]` but not reach attributes, and refuse null values
rather than writing the text "None".
"""

from __future__ import annotations

import math
import re
import string
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from audit import ascii_numbers


class ExprError(Exception):
    """An expression could not be evaluated on a record; `column` names the culprit when known."""

    def __init__(self, message: str, column: str | None = None):
        super().__init__(message)
        self.column = column


class _Formatter(string.Formatter):
    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        obj, used = super().get_field(field_name, args, kwargs)
        if obj is None:
            raise ExprError(f"template field {{{field_name}}} is null", field_name.split("[")[0])
        return obj, used

    def format_field(self, value: Any, format_spec: str) -> Any:
        try:
            return format(value, format_spec)
        except (ValueError, TypeError):
            # CSV cells are text: let `{n:03d}` format "7" as a number.
            if isinstance(value, str) and format_spec:
                for conv in (parse_int, parse_float):
                    number = conv(value)
                    if number is None:
                        continue
                    try:
                        return format(number, format_spec)
                    except (ValueError, TypeError):
                        continue
            raise


_FORMATTER = _Formatter()

MAX_FORMAT_NUMBER = 1000
"""Largest width or precision a --map template's format spec may give."""


class Expr:
    """A column name or a format template, compiled once and evaluated per record."""

    def __init__(self, text: str):
        self.text = text
        self.template = "{" in text or "}" in text
        if not self.template:
            if not text:
                raise ValueError("empty column name")
            self.columns: tuple[str, ...] = (text,)
            return
        roots = []
        try:
            parsed = list(_FORMATTER.parse(text))
        except ValueError as e:
            raise ValueError(f"bad template {text!r}: {e}") from None
        for _, field_name, spec, _ in parsed:
            if field_name is None:
                continue
            if field_name == "" or field_name.isdigit():
                raise ValueError(f"bad template {text!r}: fields must name columns, e.g. {{item_index}}")
            root = re.split(r"[.\[]", field_name, maxsplit=1)[0]
            if "." in field_name.split("[", 1)[0] or re.search(r"\]\.", field_name):
                raise ValueError(f"bad template {text!r}: attribute access ({field_name}) is not allowed; "
                                 f"index with [key]")
            if spec and "{" in spec:
                raise ValueError(f"bad template {text!r}: nested fields in format specs are not allowed")
            # A width or precision is a size the template declares: `{id:>1500000000}` builds 1.5 GB per row.
            if spec and any(int(d) > MAX_FORMAT_NUMBER for d in re.findall(r"[0-9]+", spec)):
                raise ValueError(f"bad template {text!r}: a format width or precision over {MAX_FORMAT_NUMBER:,}")
            roots.append(root)
        self.columns = tuple(dict.fromkeys(roots))

    def __call__(self, record: Mapping[str, Any]) -> Any:
        if not self.template:
            if self.text not in record:
                raise ExprError(f"refers to missing column {self.text!r}", self.text)
            return record[self.text]
        for col in self.columns:
            if col not in record:
                raise ExprError(f"template {self.text!r} refers to missing column {col!r}", col)
        try:
            return _FORMATTER.vformat(self.text, (), record)
        except ExprError:
            raise
        except KeyError as e:
            raise ExprError(f"template {self.text!r}: missing key {e.args[0]!r}", self.columns[0]) from None
        except (IndexError, TypeError, ValueError) as e:
            raise ExprError(f"template {self.text!r}: {e}") from None

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"


# --------------------------------------------------------------------------- types


def field_types(model: type[BaseModel], name: str) -> tuple[type, ...]:
    """The plain types a model field accepts (`int | None` gives (int, NoneType))."""
    ann = model.model_fields[name].annotation

    def flat(t: Any) -> list[Any]:
        origin = typing.get_origin(t)
        if origin is typing.Annotated:  # a bounded int (models.Count) is an int
            return flat(typing.get_args(t)[0])
        if origin in (typing.Union, types.UnionType):
            return [x for a in typing.get_args(t) for x in flat(a)]
        return [origin or t]

    return tuple(flat(ann))


def parse_int(text: str) -> int | None:
    """An integer written in ASCII digits (surrounding blanks allowed), else None.

    int() and re's \\d take any Unicode digit ("٣" is 3, "３" is 3) and underscores ("1_0" is 10), and
    str.isdigit() takes "²", which int() then refuses: a file that writes a number another way is refused,
    never read as the digits it resembles."""
    text = text.strip()
    return int(text) if ascii_numbers.INT.fullmatch(text) else None


def parse_float(text: str) -> float | None:
    """A finite decimal number written in ASCII (`-1.5`, `2e-3`), else None (no nan, inf, `1_0` or "٣")."""
    text = text.strip()
    if not ascii_numbers.FLOAT.fullmatch(text):
        return None
    f = float(text)
    return f if math.isfinite(f) else None


def coerce(value: Any, accepts: tuple[type, ...], *, int_to_text: bool = False) -> Any:
    """Convert text (CSV cells, templates, --const values) to the field's type when that is lossless.

    With `int_to_text` (identifier-like fields) an integer becomes its decimal text, so
    `question_id: 84` gives item id "84". Anything else is returned unchanged for the
    row schema to accept or reject.
    """
    if str in accepts:
        if int_to_text and isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value
    if not isinstance(value, str):
        if float in accepts and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value
    text = value.strip()
    if text == "" and type(None) in accepts:
        return None
    if bool in accepts and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if int in accepts and parse_int(text) is not None:
        return parse_int(text)
    if float in accepts:
        f = parse_float(text)
        return value if f is None else f
    if list in accepts and text.startswith("["):
        from audit.fileio import loads_strict

        try:
            return loads_strict(text)  # strictly, as every JSON audit reads (a key twice is refused)
        except ValueError:
            return value
    return value


def as_text(value: Any) -> str:
    """How `--where` and `--sample-from` compare values: JSON spelling for null and booleans."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --------------------------------------------------------------------------- --map and --where, shared


def split_assignment(opt: str, text: str, allow_negation: bool = False) -> tuple[str, str, bool]:
    """`NAME=VALUE` (or `NAME!=VALUE` with `allow_negation`) as (name, value, negated); AuditError otherwise."""
    from audit.errors import AuditError

    neg = False
    if allow_negation and "!=" in text and text.index("!=") < text.find("=") + 1:
        name, value = text.split("!=", 1)
        neg = True
    elif "=" in text:
        name, value = text.split("=", 1)
    else:
        raise AuditError(f"{opt} {text!r}: expected NAME=VALUE")
    name = name.strip()
    if not name:
        raise AuditError(f"{opt} {text!r}: empty name before '='")
    return name, value, neg


def select_where(where: Sequence[tuple[str, str, bool]], obj: Mapping[str, Any], label: str, row: int) -> bool:
    """Whether a record passes `--where`: the same column given several times matches any of its values,
    different columns must all match; `COL!=VALUE` excludes. A missing column is an error, not a miss."""
    from audit.errors import AuditError

    by_col: dict[str, list[tuple[str, bool]]] = {}
    for col, value, neg in where:
        by_col.setdefault(col, []).append((value, neg))
    for col, tests in by_col.items():
        if col not in obj:
            raise AuditError(f"--where refers to missing column {col!r}", path=label, row=row, field=col)
        have = as_text(obj[col])
        positive = [v for v, neg in tests if not neg]
        if positive and have not in positive:
            return False
        if any(neg and have == v for v, neg in tests):
            return False
    return True


def parse_maps(maps: Sequence[str], target: Callable[[str, str], str]) -> dict[str, Expr]:
    """`--map FIELD=EXPR` options as {field: expression}; `target(option, name)` checks (and may rename) each
    field, raising AuditError for one the command does not read."""
    from audit.errors import AuditError

    mapped: dict[str, Expr] = {}
    for text in maps:
        name, expr, _ = split_assignment("--map", text)
        name = target("--map", name)
        if name in mapped:
            raise AuditError(f"--map {name}: given twice")
        try:
            mapped[name] = Expr(expr)
        except ValueError as e:
            raise AuditError(f"--map {name}: {e}") from None
    return mapped


@dataclass(frozen=True)
class RecordMap:
    """`--map FIELD=EXPR` and `--where COL=VALUE` for an importer that reads fixed field names: each record is
    filtered, then the mapped fields are filled from its columns (or templates) before the importer reads it.
    One option, one meaning, in `import table`, `import verdicts` and `import mmlu-pro`."""

    maps: tuple[tuple[str, Expr], ...] = ()
    where: tuple[tuple[str, str, bool], ...] = ()

    @classmethod
    def parse(cls, maps: Sequence[str] = (), where: Sequence[str] = (), *,
              fields: Sequence[str] | None = None) -> RecordMap:
        """Check the options (a field the importer does not read is refused, naming those it does)."""
        from audit.errors import AuditError

        def target(opt: str, name: str) -> str:
            if fields is not None and name not in fields:
                raise AuditError(f"{opt} {name}: not a field this command reads (fields: {', '.join(fields)})")
            return name

        mapped = parse_maps(maps, target)
        filters = tuple(split_assignment("--where", t, allow_negation=True) for t in where)
        return cls(tuple(mapped.items()), filters)

    def __bool__(self) -> bool:
        return bool(self.maps or self.where)

    def selected(self, obj: Mapping[str, Any], label: str, row: int) -> bool:
        return not self.where or select_where(self.where, obj, label, row)

    def apply(self, obj: dict[str, Any], label: str, row: int) -> dict[str, Any]:
        """The record with each mapped field filled (the source's own column of that name is replaced)."""
        from audit.errors import AuditError

        if not self.maps:
            return obj
        out = dict(obj)
        for name, expr in self.maps:
            try:
                out[name] = expr(obj)
            except ExprError as e:
                raise AuditError(f"--map {name}: {e}", path=label, row=row, field=e.column or name) from None
        return out

    def as_json(self) -> dict[str, Any]:
        return {"map": {k: e.text for k, e in self.maps},
                "where": [f"{c}{'!=' if neg else '='}{v}" for c, v, neg in self.where]}


def mapped_rows(rows: Any, rmap: RecordMap | None, keep: Sequence[str] | None = None) -> Any:
    """`rows` (SourceRow-like: path, row, obj, error) selected and mapped by `rmap`; with `keep`, only those
    fields stay (a command that refuses unknown fields reads the mapped record, not the source's columns)."""
    for src in rows:
        if not rmap or src.obj is None or src.error:
            yield src
            continue
        if not rmap.selected(src.obj, src.path, src.row):
            continue
        obj = rmap.apply(src.obj, src.path, src.row)
        if keep is not None:
            obj = {k: obj[k] for k in keep if k in obj}
        yield type(src)(src.path, src.row, obj)

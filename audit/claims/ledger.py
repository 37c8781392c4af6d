"""The claims ledger (`claims.yaml`): a lab's headline numbers, each with its inputs and a recipe.

A row is a claim with a stable id (`B8`), its text, the value as published with its
unit, a status tag, the inputs it comes from (packages by id and content digest,
plain files by sha256), a recipe that recomputes it and an explicit tolerance. A
retracted claim keeps its published value beside the corrected one and the reason.

Reading is defensive: the file is parsed with PyYAML's safe loader, refusing what
YAML can hide: duplicate keys, anchors and aliases (so no alias bombs), explicit tags,
merge keys, several documents, non-text keys, files over 1 MiB. Every path is relative
to the ledger's folder and must stay inside it. Errors are one line naming the file,
the line, the claim and the field.
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml
from pydantic import Field, model_validator

from audit.errors import AuditError, error_words
from audit.fileio import read_document, sha256_bytes
from audit.models import Record, unsafe_path_reason
from audit.schemas import register

LEDGER_SCHEMA_VERSION = 1
MAX_LEDGER_BYTES = 1024 * 1024
"""Largest ledger read: a ledger is a page of numbers, not data."""

Status = Literal["measured", "single-run", "single-trace", "arithmetic", "retracted"]

_ID = r"^[A-Za-z][A-Za-z0-9_]{0,39}$"
_INPUT_ID = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$"
_SHA256 = r"^[0-9a-f]{64}$"
_RECIPE_NAME = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$"


class LedgerError(AuditError):
    """A ledger that cannot be used as written: exit 2, one line naming file, line, claim and field."""


# --------------------------------------------------------------------------- models


class Tolerance(Record):
    """How far a recomputed value may be from the recorded one and still survive; exactly one bound."""

    absolute: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Largest |recomputed − recorded|, in the claim's unit (e.g. 0.005 for a figure published as 62.50%)."""
    relative: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Largest |recomputed − recorded| / |recorded| (e.g. 0.01 for 1%)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> Tolerance:
        if (self.absolute is None) == (self.relative is None):
            raise ValueError("give exactly one of absolute or relative")
        return self

    def allows(self, recorded: float, recomputed: float) -> bool:
        """True when `recomputed` is within the tolerance of `recorded`.

        Two whole numbers (counts) are compared exactly; otherwise only a float's last bits are forgiven
        (a few units in the last place of the larger value, never a slack that grows past them: with
        1e-9·|recorded| a zero tolerance let 10,000,000,007 recompute as 10,000,000,000)."""
        diff = abs(recomputed - recorded)
        bound = self.absolute if self.absolute is not None else self.relative * abs(recorded)  # type: ignore[operator]
        if all(float(v).is_integer() and abs(v) < 2 ** 53 for v in (recorded, recomputed)):  # counts, exactly held
            return diff <= bound
        return diff <= bound + 4 * math.ulp(max(abs(recorded), abs(recomputed)))

    def text(self, unit: str) -> str:
        """The tolerance in words: `±0.005%`, `±0.01 pts`, `exact`, `±1% relative`."""
        if self.absolute == 0 or self.relative == 0:
            return "exact"
        if self.absolute is not None:
            suffix = {"percent": "%", "points": " pts", "count": ""}.get(unit, f" {unit}")
            return f"±{self.absolute:g}{suffix}"
        return f"±{100 * self.relative:g}% relative"  # type: ignore[operator]


class RecipeCall(Record):
    """A named computation with its arguments, e.g. `grade.accuracy` with `{package: …, benchmark: …}`."""

    name: str = Field(pattern=_RECIPE_NAME)
    """A registered recipe (`audit claims recipes` lists them with their arguments)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Its arguments; inputs are named by their ledger id, never by a path."""

    def call(self) -> str:
        """The call as one line: `grade.accuracy(package=…, benchmark=math500, policy.truncation=wrong)`."""
        return f"{self.name}({', '.join(f'{k}={v}' for k, v in _flat(self.args))})"


def _flat(args: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for k, v in args.items():
        if isinstance(v, dict):
            out += _flat(v, f"{prefix}{k}.")
        elif isinstance(v, list):
            out.append((f"{prefix}{k}", "[" + ", ".join(map(str, v)) + "]"))
        else:
            out.append((f"{prefix}{k}", str(v)))
    return out


class Retraction(Record):
    """Why a published value was withdrawn and what it became."""

    corrected: float = Field(allow_inf_nan=False)
    """The corrected value, in the claim's unit; `recipe` must recompute it."""
    reason: str = Field(min_length=1)
    """What was wrong with the published value, in one or two sentences."""
    published_recipe: RecipeCall | None = None
    """A recipe that reproduces the published value from what was recorded (e.g. `verdicts.accuracy` on the
    lab's own verdicts), so the ledger shows which number is retracted and where it came from."""


class Claim(Record):
    """One headline number: what was said, where it comes from, and how to recompute it."""

    id: str = Field(pattern=_ID)
    """Stable id, e.g. `B8`: letters, digits and `_`, starting with a letter (arithmetic claims name others by it)."""
    text: str = Field(min_length=1)
    """The claim in words, as a reader would quote it."""
    value: float = Field(allow_inf_nan=False)
    """The value as recorded (published), in `unit`. For a retracted claim: the withdrawn value."""
    unit: str = Field(min_length=1, max_length=40)
    """Unit of `value`: `percent`, `fraction`, `points`, `count`, `ratio`, `tok/s`, … (see `audit.claims.units`)."""
    status: Status
    """`measured` (repeated runs), `single-run`, `single-trace`, `arithmetic` (from other claims) or `retracted`."""
    sources: list[str] = Field(default_factory=list)
    """Ids of the packages and files (from `packages` and `files`) the claim is computed from: exactly the
    inputs its recipes read."""
    recipe: RecipeCall
    """How to recompute the claim (for a retracted claim: the corrected value)."""
    tolerance: Tolerance
    """How close the recomputed value must be to survive; explicit, no default."""
    recorded_verdicts: str | None = None
    """Id of the verdicts behind the recorded value (a file in `files`); when the claim does not survive,
    `audit verify` diffs them against the recomputed grading and lists every item whose verdict changed."""
    retraction: Retraction | None = None
    """Required when `status` is `retracted`, refused otherwise."""
    note: str | None = None
    """Anything a reader needs to interpret the number (scope, caveats)."""

    @model_validator(mode="after")
    def _retraction_matches_status(self) -> Claim:
        if self.status == "retracted" and self.retraction is None:
            raise ValueError("a retracted claim needs `retraction` (corrected value and reason)")
        if self.status != "retracted" and self.retraction is not None:
            raise ValueError(f"only a retracted claim has `retraction` (status is {self.status!r})")
        return self


class PackageInput(Record):
    """A package the ledger reads, pinned by content digest."""

    id: str = Field(pattern=_INPUT_ID)
    """The package's `package_id`, as its manifest says."""
    path: str
    """Directory or `.tar.gz`, relative to the ledger's folder and inside it."""
    sha256: str = Field(pattern=_SHA256)
    """The package's content digest (sha256 over its files' paths and hashes: `audit validate` prints it)."""


class FileInput(Record):
    """A file the ledger reads that is not a package (a verdict file, recorded verdicts), pinned by sha256."""

    id: str = Field(pattern=_INPUT_ID)
    """Id used by claims and recipes."""
    path: str
    """Relative to the ledger's folder and inside it."""
    sha256: str = Field(pattern=_SHA256)
    """sha256 of the file's bytes."""
    format: Literal["verdicts", "verdict-table"]
    """`verdicts`: a verdict file (`audit grade`); `verdict-table`: per-item verdicts another tool recorded
    (read as `audit import verdicts` reads them)."""
    benchmark: str | None = None
    """For `verdict-table`: the benchmark the verdicts are for."""
    package: str | None = None
    """For `verdict-table`: id of the responses package the verdicts were computed from."""
    tool: str | None = None
    """For `verdict-table`: who recorded them (e.g. `the lab's runner`)."""

    @model_validator(mode="after")
    def _table_fields(self) -> FileInput:
        if self.format == "verdict-table" and (self.benchmark is None or self.package is None):
            raise ValueError("a verdict-table needs `benchmark` and `package`")
        if self.format != "verdict-table" and (self.benchmark or self.package or self.tool):
            raise ValueError("`benchmark`, `package` and `tool` are for format verdict-table only")
        return self


class Ledger(Record):
    """`claims.yaml`: headline numbers, each recomputable from pinned inputs by a named recipe."""

    schema_version: int = LEDGER_SCHEMA_VERSION
    """Version of this format; readers refuse newer versions."""
    kind: Literal["claims"] = "claims"
    """Always `claims`."""
    title: str = Field(min_length=1)
    """What the numbers are about (a note, a model card, a release)."""
    description: str | None = None
    """A paragraph for the page."""
    packages: list[PackageInput] = Field(default_factory=list)
    """Every package the claims read."""
    files: list[FileInput] = Field(default_factory=list)
    """Every other file the claims read."""
    claims: list[Claim] = Field(min_length=1)
    """The claims, in the order the page shows them."""


register("claims.v1", Ledger)


# --------------------------------------------------------------------------- YAML


class _Refused(yaml.YAMLError):
    def __init__(self, message: str, mark: Any):
        super().__init__(message)
        self.message = message
        self.mark = mark


class _Loader(yaml.SafeLoader):
    """SafeLoader without aliases, anchors, tags, merge keys, duplicate or non-text keys, or timestamps."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(f"alias *{event.anchor} is not allowed (no anchors or aliases in a ledger)",
                           event.start_mark)
        if getattr(event, "anchor", None) is not None:
            raise _Refused(f"anchor &{event.anchor} is not allowed (no anchors or aliases in a ledger)",
                           event.start_mark)
        if getattr(event, "tag", None) is not None:
            raise _Refused(f"tag {event.tag} is not allowed (plain YAML values only)", event.start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _Refused("merge key << is not allowed", key_node.start_mark)
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise _Refused(f"key {key!r} is not text", key_node.start_mark)
            if key in seen:
                raise _Refused(f"duplicate key {key!r} (first on line {seen[key]})", key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


# Dates stay text: `2026-11-29` is a string in a ledger, not a datetime. (New lists: SafeLoader's stay as they are.)
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
# YAML 1.1 reads `1e-3` (no dot) as text; YAML 1.2 and JSON read a number. A ledger written as JSON is YAML.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def _line_map(node: Any, path: tuple[Any, ...] = (), out: dict[tuple[Any, ...], int] | None = None
              ) -> dict[tuple[Any, ...], int]:
    """Line (1-based) of every node, by its path of keys and indexes."""
    out = {} if out is None else out
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):  # other keys are refused when the document is built
                _line_map(v, path + (k.value,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _line_map(v, path + (i,), out)
    return out


def read_ledger_bytes(path: Path) -> bytes:
    """The ledger's bytes, read once from a regular file (a link to one is followed; a FIFO or device is
    refused, not waited on): what is parsed is what its sha256 describes."""
    if not path.is_file():
        raise LedgerError("no such file", path=str(path))
    data, err = read_document(path, MAX_LEDGER_BYTES, what="a ledger")
    if data is None:
        raise LedgerError(str(err), path=str(path))
    return data


def read_yaml(path: Path, data: bytes | None = None) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """The ledger's data and the line of every node; LedgerError on anything refused. `data`: the ledger's
    bytes when already read (see read_ledger_bytes)."""
    label = str(path)
    if data is None:
        data = read_ledger_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LedgerError(f"not valid UTF-8 at byte {e.start}", path=label) from None
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise LedgerError("empty document", path=label)
        lines = _line_map(node)
        obj = loader.construct_document(node)
    except _Refused as e:
        raise LedgerError(f"line {e.mark.line + 1}: {e.message}", path=label) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}: " if mark else ""
        what = " ".join(str(x) for x in (e.context, e.problem) if x)
        raise LedgerError(f"{where}not valid YAML: {what}", path=label) from None
    except yaml.YAMLError as e:
        raise LedgerError(f"not valid YAML: {' '.join(str(e).split())}", path=label) from None
    except RecursionError:
        raise LedgerError("not valid YAML: nested too deeply", path=label) from None
    finally:
        loader.dispose()
    if not isinstance(obj, dict):
        raise LedgerError(f"expected a mapping at the top, found {type(obj).__name__}", path=label)
    return obj, lines


# --------------------------------------------------------------------------- loading


@dataclass
class LoadedLedger:
    """A ledger read and checked: its model, its folder (every path is inside it) and its lines."""

    path: Path
    root: Path
    ledger: Ledger
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)
    sha256: str = ""
    """sha256 of the bytes that were parsed (reports name it, never a second read of the file)."""

    @property
    def packages(self) -> dict[str, PackageInput]:
        return {p.id: p for p in self.ledger.packages}

    @property
    def files(self) -> dict[str, FileInput]:
        return {f.id: f for f in self.ledger.files}

    @property
    def claims(self) -> dict[str, Claim]:
        return {c.id: c for c in self.ledger.claims}

    def error(self, message: str, *, claim: Claim | None = None, field: str | None = None,
              loc: tuple[Any, ...] = ()) -> LedgerError:
        """A one-line error naming the file, the line of `loc`, the claim and the field."""
        return _error(self.path, self.lines, message, loc=loc, claim=claim.id if claim else None, field=field)

    def claim_loc(self, claim: Claim, *rest: Any) -> tuple[Any, ...]:
        index = next(i for i, c in enumerate(self.ledger.claims) if c is claim)  # two equal claims differ here
        return ("claims", index, *rest)

    def resolve(self, rel: str) -> Path:
        """The absolute path of a ledger path; refuses anything outside the ledger's folder."""
        return resolve_inside(self.root, rel)


def resolve_inside(root: Path, rel: str) -> Path:
    """`root / rel`, refusing absolute paths, `..`, and symbolic links that lead out of `root`."""
    reason = None if rel == "manifest.json" else unsafe_path_reason(rel)
    if reason:
        raise ValueError(f"{reason}: ledger paths are relative to the ledger's folder and stay inside it")
    full = root / rel
    real_root = root.resolve()
    if not full.resolve().is_relative_to(real_root):
        raise ValueError("resolves outside the ledger's folder (through a symbolic link)")
    return full


def _line(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def _error(path: Path, lines: dict[tuple[Any, ...], int], message: str, *, loc: tuple[Any, ...] = (),
           claim: str | None = None, field: str | None = None) -> LedgerError:
    parts = []
    line = _line(lines, loc) if loc else None
    if line is not None:
        parts.append(f"line {line}")
    if claim is not None:
        parts.append(f"claim {claim}")
    if field:
        parts.append(f"field {field}")
    return LedgerError(": ".join(parts + [message]), path=str(path))


_SECTION_LABEL = {"packages": "package", "files": "file"}


def _pydantic_error(path: Path, obj: dict[str, Any], lines: dict[tuple[Any, ...], int],
                    err: pydantic.ValidationError) -> LedgerError:
    e = err.errors(include_url=False)[0]
    loc = tuple(e["loc"])
    claim = None
    prefix: list[str] = []
    rest = loc
    if len(loc) >= 2 and loc[0] in ("claims", "packages", "files") and isinstance(loc[1], int):
        seq = obj.get(loc[0])
        entry = seq[loc[1]] if isinstance(seq, list) and loc[1] < len(seq) else None
        ident = entry.get("id") if isinstance(entry, dict) else None
        ident = ident if isinstance(ident, str) else f"#{loc[1] + 1}"
        if loc[0] == "claims":
            claim = ident
        else:
            prefix.append(f"{_SECTION_LABEL[loc[0]]} {ident}")
        rest = loc[2:]
    # A model validator's error has no field of its own: name the entry.
    fieldname = ".".join(str(p) for p in rest) or None
    msg = error_words(e, "field", quiet=("value_error", "assertion_error"))
    line = _line(lines, loc)
    parts = ([f"line {line}"] if line else []) + prefix + ([f"claim {claim}"] if claim else [])
    if fieldname:
        parts.append(f"field {fieldname}")
    return LedgerError(": ".join(parts + [msg]), path=str(path))


def load_ledger(path: str | os.PathLike[str]) -> LoadedLedger:
    """Read `claims.yaml` and check everything that can be checked without reading its inputs.

    Checks: the schema; unique ids; paths inside the ledger's folder; every recipe known and its
    arguments typed; every input a recipe reads listed in the claim's `sources` and no other;
    units the recipe can give; arithmetic that names known claims without cycles.
    """
    from audit.claims import registry

    p = Path(path)
    data = read_ledger_bytes(p)
    obj, lines = read_yaml(p, data)
    version = obj.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _error(p, lines, "missing or non-integer schema_version", loc=("schema_version",),
                     field="schema_version")
    if version > LEDGER_SCHEMA_VERSION:
        raise _error(p, lines, f"schema_version {version} is newer than this audit reads "
                               f"({LEDGER_SCHEMA_VERSION}); upgrade audit", loc=("schema_version",),
                     field="schema_version")
    try:
        ledger = Ledger.model_validate(obj)
    except pydantic.ValidationError as e:
        raise _pydantic_error(p, obj, lines, e) from None
    loaded = LoadedLedger(p, p.resolve().parent, ledger, lines, sha256_bytes(data))
    _check_ids(loaded)
    _check_paths(loaded)
    for claim in ledger.claims:
        registry.check_claim(loaded, claim)
    registry.claim_order(loaded)  # refuses cycles
    return loaded


def _check_ids(led: LoadedLedger) -> None:
    seen: dict[str, str] = {}
    for section, entries in _inputs(led):
        for i, e in enumerate(entries):
            if e.id in seen:
                raise led.error(f"id {e.id!r} is used twice (also in {seen[e.id]})", loc=(section, i, "id"),
                                field=f"{section}.id")
            seen[e.id] = section
    claims: set[str] = set()
    for c in led.ledger.claims:
        if c.id in claims:
            raise led.error("claim id is used twice", claim=c, field="id", loc=led.claim_loc(c, "id"))
        claims.add(c.id)
    for i, f in enumerate(led.ledger.files):
        if f.package is not None and f.package not in led.packages:
            raise led.error(f"names package {f.package!r}, which `packages` does not list",
                            loc=("files", i, "package"), field=f"files.{f.id}.package")


def _inputs(led: LoadedLedger) -> tuple[tuple[str, Sequence[PackageInput | FileInput]], ...]:
    """The ledger's inputs by section: packages, then files."""
    return ("packages", led.ledger.packages), ("files", led.ledger.files)


def _check_paths(led: LoadedLedger) -> None:
    for section, entries in _inputs(led):
        for i, e in enumerate(entries):
            try:
                led.resolve(e.path)
            except ValueError as err:
                raise led.error(f"{e.path!r}: {err}", loc=(section, i, "path"),
                                field=f"{section}.{e.id}.path") from None


# --------------------------------------------------------------------------- arithmetic


_ARITH_FUNCS: dict[str, Callable[..., float]] = {"abs": abs, "min": min, "max": max, "sqrt": math.sqrt,
                                                 "log": math.log, "exp": math.exp}
_ARITH_OPS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b}
MAX_EXPR_CHARS = 400


def parse_expression(expr: str) -> tuple[ast.Expression, list[str]]:
    """Parse an arithmetic expression over claim ids; return the tree and the ids it names, in order.

    Allowed: numbers, claim ids, + − × ÷, unary minus, parentheses, and abs/min/max/sqrt/log/exp.
    No powers (9**9**9 would not finish), attributes, subscripts or other calls.
    """
    if len(expr) > MAX_EXPR_CHARS:
        raise ValueError(f"longer than {MAX_EXPR_CHARS} characters")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"not an arithmetic expression: {e.msg}") from None
    names: list[str] = []

    def walk(node: ast.AST) -> None:
        if isinstance(node, ast.Expression):
            walk(node.body)
        elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
            walk(node.left)
            walk(node.right)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            walk(node.operand)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, (int, float))
              and not isinstance(node.value, bool)):
            if not math.isfinite(_number(node.value)):
                shown = ast.get_source_segment(expr, node) or ""
                raise ValueError(f"the number {shown if len(shown) <= 30 else shown[:30] + '…'} is out of range")
        elif isinstance(node, ast.Name):
            if node.id not in names:
                names.append(node.id)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ARITH_FUNCS
              and not node.keywords):
            for a in node.args:
                walk(a)
            name, n = node.func.id, len(node.args)
            if name in ("min", "max") and n < 2:
                raise ValueError(f"{name} takes at least 2 arguments (got {n})")
            if name not in ("min", "max") and n != 1:
                raise ValueError(f"{name} takes 1 argument (got {n})")
        else:
            what = type(node.op).__name__ if isinstance(node, (ast.BinOp, ast.UnaryOp)) else type(node).__name__
            raise ValueError(f"{what} is not allowed (numbers, claim ids, + - * /, parentheses and "
                             f"{', '.join(_ARITH_FUNCS)} only)")

    walk(tree)
    return tree, names


def _number(value: int | float) -> float:
    """A constant as a float; inf when it has none (an integer literal of hundreds of digits)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def evaluate(tree: ast.Expression, values: dict[str, float]) -> float:
    """Evaluate a tree from `parse_expression` with the given claim values."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.BinOp):
            return _ARITH_OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Constant):
            assert isinstance(node.value, (int, float))  # parse_expression admits no other constant
            return float(node.value)
        if isinstance(node, ast.Name):
            return values[node.id]
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        return float(_ARITH_FUNCS[node.func.id](*[ev(a) for a in node.args]))

    return ev(tree)

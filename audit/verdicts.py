"""The verdict file: what `audit grade` writes and `audit diff` / `audit release` read.

One JSON document: a header naming every input by hash (responses and items
packages), the extractor and grader by `name@version` and fingerprint, the code
version and every policy; per-item rows under `items`; figures with their
intervals under `summary`. Rows are written one per line so the file diffs well
and stays byte-identical for identical inputs.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import re
import typing
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import Field

from audit.errors import AuditError, ValidationFailed
from audit.fileio import JsonError, dumps, fsync_dir, loads_strict, parse_object, read_regular, sha256_bytes
from audit.models import MAX_COUNT, Count, Int64, Producer, Record, Verdict, unsafe_path_reason
from audit.outputs import EXISTS, not_ours, refusal
from audit.schemas import register

VERDICT_FILE_SCHEMA_VERSION = 2
"""Version 2 added `summary.subjects`; version-1 files still load, and reproduce byte for byte (written without it)."""

VERDICTS: tuple[str, ...] = typing.get_args(Verdict)

ROW_STATUSES = (
    "correct",
    "incorrect",
    "no_answer",
    "truncated",
    "random_guess",
    "parse_error_answer",
    "parse_error_reference",
    "timeout",
    "error",
    "excluded",
    "missing",
    "bad_input",
)
"""Why a row got its verdict. `correct`/`incorrect` are plain gradings; the rest name a
special case, and the verdict says how it counts under the run's policies."""


class ComponentRef(Record):
    """A versioned extractor or grader."""

    name: str
    """Registered name, e.g. `mmlu_pro.official`."""
    version: str
    """Registered version, e.g. `f418b11`."""
    fingerprint: str
    """sha256 of the version's code and config (see `audit.registry`)."""

    @property
    def key(self) -> str:
        """`name@version`."""
        return f"{self.name}@{self.version}"


class PackageRef(Record):
    """A package used as input, pinned by content digest."""

    package_id: str
    """The package's id from its manifest."""
    digest: str
    """Content digest (sha256 over its files' paths and hashes); `audit reproduce` refuses another."""
    path: str | None = None
    """Where the package was read from, relative to the verdict file's directory when possible."""


class Policies(Record):
    """Every choice that affects a figure, recorded so a grading can be reproduced and diffed."""

    truncation: Literal["wrong", "exclude"] = "wrong"
    """A response cut at the output ceiling (finish_reason `length`) is never credited: counted wrong, or excluded."""
    resampling: Literal["original", "longer-only"] = "original"
    """Which attempt counts when a (item, sample) has several: the original, or `longer-only` (a re-run
    longer than the original's cut replaces it, else the original stays)."""
    no_answer: Literal["wrong", "random-guess"] = "wrong"
    """No extracted answer: counted wrong, or (official MMLU-Pro) replaced by a seeded random guess."""
    guess_seed: Int64 = 12345
    """Seed of the random guess policy (upstream MMLU-Pro's compute_accuracy.py uses 12345)."""
    exclude: list[str] = Field(default_factory=list)
    """Item ids excluded by the caller (in addition to rows the package marks `excluded`)."""
    scope: Literal["items", "responses"] = "items"
    """Which items are in the denominator: every item of the items package (an item without a
    response in some run is a `missing` row), or only items with at least one response row."""
    at_budget: Literal["count", "truncated"] = "count"
    """A response that used exactly `max_tokens` and said `stop` (see ResponseRow.at_budget): graded as any
    other (`count`, its row's detail says `at_budget`), or taken as cut at the ceiling (`truncated`, under
    the truncation policy). Written in the file only when not `count`."""


class VerdictRow(Record):
    """One graded (item, sample): the answer read, how, and the verdict."""

    item_id: str
    """The item's id."""
    sample: Count
    """Run index (0..K-1)."""
    attempt: Count | None
    """Attempt that was graded (0 = original); null when no response exists."""
    response_sha256: str | None = None
    """sha256 of the graded response text (UTF-8), so a diff can tell a changed text from a changed reading."""
    answer: str | None
    """Answer the extractor read; null when none."""
    rule: str | None
    """Extractor step that fired (e.g. `L1`, `final_line`), or why none did."""
    span: list[Count] | None = None
    """[start, end) character offsets of the evidence in the response."""
    verdict: Verdict
    """How the row counts: graded correct, graded incorrect, or left out of the graded denominator."""
    status: str
    """Why: one of ROW_STATUSES (e.g. `truncated`, `no_answer`, `timeout`, `excluded`)."""
    reason: str
    """One line explaining the verdict."""
    reference: str | None = None
    """Gold answer the row was graded against (verdict files are private; releases drop it for protected items)."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """Policy details for this row, e.g. the random guess `{seed, draw, guess}` or the attempts considered."""


class Interval(Record):
    """An uncertainty interval around a figure, with the formula that produced it."""

    method: str
    """Formula id: `binomial_2se`, `runs_2se`, `runs_t`, `clustered_t`, `zero_failure_upper`."""
    formula: str
    """The formula in words, e.g. `p ± 2·√(p(1−p)/n)`."""
    low: float
    """Lower end."""
    high: float
    """Upper end."""
    se: float | None = None
    """Standard error used, when the formula has one."""


class Figure(Record):
    """One accuracy figure: a run's or the overall, with one denominator variant."""

    name: str
    """Stable id used by `audit diff`, e.g. `accuracy[sample=0]`, `accuracy`, `accuracy_counting_excluded`."""
    sample: Count | None
    """Run index, or null for the overall figure."""
    denominator: Literal["graded", "all"]
    """`graded`: excluded and ungradable rows left out; `all`: every row, those counted wrong."""
    correct: Count
    """Rows graded correct."""
    total: Count
    """Denominator."""
    value: float
    """correct / total, pooled over the runs for the overall figure (0 when total is 0). The `runs_*`
    intervals are centred on the mean of the runs' values and `clustered_t` on the mean of per-question
    means; with equal denominators all three centres are this value."""
    intervals: list[Interval] = Field(default_factory=list)
    """Uncertainty intervals, each naming its formula."""


class Summary(Record):
    """Figures per run and overall, and counts by status."""

    samples: Count
    """Number of runs K."""
    items: Count
    """Number of distinct items."""
    statuses: dict[str, Count]
    """Rows per status."""
    figures: list[Figure]
    """Every figure: per run and overall, both denominators."""
    excluded: list[dict[str, Any]] = Field(default_factory=list)
    """Rows left out of the graded denominator, each `{item_id, sample, status, reason}`."""

    @property
    def bad_input(self) -> int:
        """Rows with status `bad_input` (a source record that disagrees with itself, kept ungraded)."""
        return self.statuses.get("bad_input", 0)


class SubjectSummary(Record):
    """One subject's items and figures (e.g. an MMLU-Pro category)."""

    subject: str | None
    """The items' `subject` (null: items without one, when others have one)."""
    items: list[str]
    """Its item ids, in natural order (`q2` before `q10`)."""
    figures: list[Figure]
    """Its overall figures (all runs pooled), both denominators, with intervals."""


SummaryV1 = Summary
"""The summary of schema version 1 (the name `Summary` is rebound to version 2's below)."""


class SummaryV2(SummaryV1):
    """Figures per run and overall, per subject, and counts by status."""

    subjects: list[SubjectSummary] | None = None
    """Per subject, in natural order of the names (items without a subject last): empty when no item
    names one; null in schema version 1 files, which did not record subjects."""


class RowsFileRef(Record):
    """A Parquet copy of the rows beside the verdict file, for fast reading of large gradings."""

    path: str
    """File name in the verdict file's directory (no folder: a sidecar never lives elsewhere). `audit grade`
    names it after its content (`NAME.rows-SHA16.parquet`), so a new pair never overwrites the old one."""
    sha256: str
    """sha256 of the Parquet file; readers verify it before trusting it."""
    rows: Count
    """Number of rows (equals `len(items)`)."""
    json_rows_sha256: str | None = None
    """sha256 of the verdict file's own rows text (from the `[` after `"items": ` to the end of the
    file), so a reader that takes the Parquet copy can tell when the JSON rows were edited."""

    @pydantic.field_validator("path")
    @classmethod
    def _a_file_name(cls, v: str) -> str:
        if "/" in v or unsafe_path_reason(v):
            raise ValueError("must be a file name in the verdict file's directory")
        return v


class VerdictFile(Record):
    """`results.json`: a complete, reproducible grading of one responses package."""

    schema_version: int = Field(default=1, ge=1, le=1)
    """Version of this format; readers refuse versions they do not know."""
    kind: Literal["verdicts"] = "verdicts"
    """Always `verdicts`."""
    benchmark: str
    """Benchmark spec used, e.g. `mmlu_pro`."""
    responses_package: PackageRef | None
    """The graded responses, pinned by digest (null for verdicts imported from another tool)."""
    items_package: PackageRef | None = None
    """The items (references), when they came from a separate package."""
    extractor: ComponentRef | None
    """Extractor version and fingerprint (null when answers were imported)."""
    grader: ComponentRef | None
    """Grader version and fingerprint."""
    mc_extractor: ComponentRef | None = None
    """For benchmarks mixing answer types (HLE): the extractor used on multiple-choice items."""
    mc_grader: ComponentRef | None = None
    """For benchmarks mixing answer types (HLE): the grader used on multiple-choice items."""
    reference_field: str = "reference"
    """Item field the references were read from (`reference`, or `extra.KEY`)."""
    producer: Producer
    """The audit version (and git commit) that graded."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Versions of libraries the grader depends on (e.g. sympy)."""
    policies: Policies
    """Every policy applied."""
    summary: SummaryV1
    """Figures and counts."""
    rows_file: RowsFileRef | None = None
    """Parquet copy of `items`, written for large gradings."""
    items: list[VerdictRow]
    """One row per (item, sample), sorted by item_id then sample."""


VerdictFileV1 = VerdictFile
"""The verdict file of schema version 1 (the name `VerdictFile` is rebound to version 2's below)."""


class VerdictFileV2(VerdictFileV1):
    """`results.json`: a complete, reproducible grading of one responses package, with per-subject figures."""

    schema_version: int = Field(default=VERDICT_FILE_SCHEMA_VERSION, ge=1, le=VERDICT_FILE_SCHEMA_VERSION)
    """Version of this format (2 added `summary.subjects`); readers refuse newer versions. A version-1 file
    loads with `summary.subjects` null and is written back without it."""
    summary: SummaryV2
    """Figures and counts, overall, per run and per subject."""


register("verdict_file.v1", VerdictFileV1)
register("verdict_file.v2", VerdictFileV2)

# What the library builds and reads: version 2 (it reads version-1 files too, with `summary.subjects` null).
Summary = SummaryV2  # type: ignore[misc]
VerdictFile = VerdictFileV2  # type: ignore[misc]


def _header_data(header: VerdictFile) -> dict[str, Any]:
    """The header as JSON values in the layout of its own schema version (`items` removed)."""
    data = header.model_dump(mode="json", by_alias=True)
    data.pop("items")
    if data.get("policies", {}).get("at_budget") == "count":
        data["policies"].pop("at_budget")  # the default, older than the key: files graded before it reproduce
    if data.get("schema_version", VERDICT_FILE_SCHEMA_VERSION) < 2:
        data["summary"].pop("subjects", None)  # version 1 had no such key: its files reproduce byte for byte
    return data


def dump_verdict_file(vf: VerdictFile) -> str:
    """Serialise: header keys indented, one row per line; identical inputs give identical bytes."""
    data = _header_data(vf)
    rows = [r.model_dump(mode="json", by_alias=True) for r in vf.items]
    head = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
    body = ",\n".join("    " + dumps(r) for r in rows)
    items = "[\n" + body + "\n  ]" if rows else "[]"
    return head[:-2] + ',\n  "items": ' + items + "\n}\n"


VERDICT_ROW_FIELDS = tuple(VerdictRow.model_fields)
"""Key order of a row in the file (the model's field order)."""


def write_verdict_file(path: str | Path, header: VerdictFile, rows: Iterable[dict[str, Any]], *,
                       overwrite: bool = True) -> None:
    """Stream a verdict file to `path` atomically: `header` (its `items` ignored) then `rows`.

    Each row is a dict with every VERDICT_ROW_FIELDS key in that order, as `model_dump(mode="json")`
    gives; the bytes equal `dump_verdict_file` of the same content, without building a model per row.
    `overwrite`: see `write_verdict_lines`.
    """
    write_verdict_lines(path, header, (dumps(row) for row in rows), overwrite=overwrite)


def _items_section(lines: Iterable[str]) -> Iterator[str]:
    """The text of a verdict file after `"items": `, in pieces: the rows array and the closing brace."""
    first = True
    for line in lines:
        yield ("[\n    " if first else ",\n    ") + line
        first = False
    yield "[]\n}\n" if first else "\n  ]\n}\n"


def items_section_sha256(lines: Iterable[str]) -> str:
    """sha256 of the rows text `write_verdict_lines` writes for these serialised rows."""
    h = hashlib.sha256()
    for piece in _items_section(lines):
        h.update(piece.encode("utf-8"))
    return h.hexdigest()


def write_verdict_lines(path: str | Path, header: VerdictFile,
                        lines: Iterable[str] | Callable[[], Iterable[str]],
                        sidecar: dict[str, list[Any]] | None = None, *, overwrite: bool = True) -> VerdictFile:
    """`write_verdict_file` with each row already serialised as `dumps(row)` (see `encode_rows`);
    `lines` may be a function giving them afresh (they are read twice when a sidecar is written).

    With `sidecar` (the rows as columns, see `write_rows_parquet`), the rows are also written as
    Parquet beside the file and the header names it (`rows_file`, both pins). Returns the header
    written. The file and its sidecar appear together or not at all (see `_publish`).

    An existing `path` is replaced only when `overwrite` is set and it is a verdict file (audit's own:
    a user's file with a .json name is refused, see `audit.outputs`); without `overwrite` the file
    is published with a no-replace link, so of two writers racing for one name the second fails.
    """
    p = Path(path)
    fresh = lines if callable(lines) else (lambda: lines)
    if sidecar is not None and not callable(lines):
        kept = list(lines)
        fresh = lambda: kept  # noqa: E731
    tmp_side: Path | None = None
    try:
        if sidecar is not None:
            tmp_side = _temp_name(p.parent, f"{_stem(p)}.rows.parquet")
            ref = write_rows_parquet(sidecar, tmp_side, atomic=False)
            ref = ref.model_copy(update={"path": f"{_stem(p)}.rows-{ref.sha256[:16]}.parquet",
                                         "json_rows_sha256": items_section_sha256(fresh())})
            header = header.model_copy(update={"rows_file": ref})
        elif header.rows_file is not None:
            header = header.model_copy(update={"rows_file": None})
        data = _header_data(header)
        head = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
        tmp_json = _temp_name(p.parent, p.name)
        try:
            with open(tmp_json, "w", encoding="utf-8", newline="\n") as f:
                f.write(head[:-2] + ',\n  "items": ')
                for piece in _items_section(fresh()):
                    f.write(piece)
                f.flush()
                os.fsync(f.fileno())
            _publish(p, tmp_json, tmp_side, header.rows_file.path if header.rows_file else None, overwrite)
        finally:
            tmp_json.unlink(missing_ok=True)
    finally:
        if tmp_side is not None:
            tmp_side.unlink(missing_ok=True)
    return header


def _stem(p: Path) -> str:
    return p.name.removesuffix(".json")


def _temp_name(folder: Path, name: str) -> Path:
    """A hidden file name no other writer uses (two writers never share a temporary file)."""
    return folder / f".{name}.tmp-{uuid.uuid4().hex}"


def _publish(p: Path, tmp_json: Path, tmp_side: Path | None, side_name: str | None, overwrite: bool) -> None:
    """Move a verdict file (and its sidecar) into place so that readers see the old pair or the new one.

    The sidecar's name holds its digest, so it never replaces the sidecar the current file names: it
    is moved in first, then the file is renamed over the old one (the atomic step that switches
    pairs), then sidecars no longer named are removed. Writers take turns on a lock of the folder
    (flock on its descriptor: no lock file, released when a writer dies), so one never removes the
    sidecar of a pair another is putting in place; a writer killed at any point leaves the old pair
    (and at worst an unnamed sidecar, removed by the next write).

    The switch replaces only a verdict file, proven under the lock, and only with `overwrite`; without
    it, it is a hard link that fails when the name exists (the check and the publish are one step).
    """
    fd = os.open(p.parent, os.O_RDONLY)
    placed: Path | None = None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.path.lexists(p):
            if not overwrite:
                raise AuditError(EXISTS, path=str(p))
            why = not_ours(p, "verdicts")
            if why is not None:
                raise refusal(p, "verdicts", why)
        if tmp_side is not None and side_name is not None:
            final = p.parent / side_name
            existed = final.exists()  # the same content (its name holds its digest), maybe named by the file
            os.replace(tmp_side, final)
            placed = None if existed else final
        if overwrite:
            os.replace(tmp_json, p)
        else:
            try:
                os.link(tmp_json, p)  # fails when `p` exists: no writer's file is ever replaced
            except FileExistsError:
                raise AuditError(EXISTS, path=str(p)) from None
        placed = None
        fsync_dir(p.parent)
        stem = _stem(p)
        for old in p.parent.iterdir():
            name = old.name
            if name != side_name and (name == f"{stem}.rows.parquet" or (
                    name.startswith(f"{stem}.rows-") and name.endswith(".parquet"))):
                try:
                    old.unlink()
                except OSError:
                    pass  # another reader's copy, a permission: a stale sidecar is harmless
    finally:
        if placed is not None:  # the file was not switched: its new sidecar is named by nothing
            placed.unlink(missing_ok=True)
        os.close(fd)  # releases the lock


_encode_str = getattr(json.encoder, "c_encode_basestring", None) or json.encoder.py_encode_basestring
"""The string encoder `json.dumps(..., ensure_ascii=False)` uses."""

_ENCODE_CHUNK = 65536
_NONE = type(None)


def _encode_column(kind: str, prefix: str, values: list[Any]) -> list[str]:
    """`prefix` + the JSON text of each value as `dumps` writes it, by a fast path for the
    column's usual types; values of any other type go through `dumps` itself."""
    types = set(map(type, values))
    if kind in ("text", "int") and types <= ({str, _NONE} if kind == "text" else {int, _NONE}):
        # Few distinct values (verdicts, statuses, rules, reasons, letters, sample numbers):
        # encode each once. `int.__repr__` is what `json` writes for an int.
        enc = _encode_str if kind == "text" else int.__repr__
        table = {v: prefix + ("null" if v is None else enc(v)) for v in set(values)}
        return list(map(table.__getitem__, values))
    if kind == "unique" and types <= {str, _NONE}:
        return [prefix + ("null" if v is None else _encode_str(v)) for v in values]
    if kind == "span" and types <= {tuple, list, _NONE}:
        spans = [v for v in values if v]
        if set(map(len, spans)) <= {2} and set(map(type, itertools.chain.from_iterable(spans))) <= {int}:
            pair = prefix.replace("%", "%%") + "[%d,%d]"
            return [pair % v if v else prefix + ("null" if v is None else "[]") for v in values]
    if kind == "detail" and types <= {dict, _NONE}:
        return [prefix + ("{}" if not v else dumps(v)) for v in values]
    return [prefix + dumps({} if kind == "detail" and v is None else v) for v in values]


_COLUMN_KINDS = {"sample": "int", "attempt": "int", "span": "span", "detail": "detail", "response_sha256": "unique"}


def encode_rows(columns: dict[str, list[Any]]) -> Iterator[str]:
    """Rows given as columns (lists keyed by VERDICT_ROW_FIELDS, `span` lists or tuples, an empty
    `detail` as None or {}), each serialised exactly as `dumps(row)` serialises its dict.

    Several times faster than `dumps` per row: rows are encoded a chunk at a time, column by
    column, each by a fast path for its usual types (values that repeat are encoded once),
    and each row is then one join; a column chunk holding anything else goes through `dumps`.
    """
    fields = VERDICT_ROW_FIELDS
    prefixes = [("{" if i == 0 else ",") + _encode_str(k) + ":" for i, k in enumerate(fields)]
    kinds = [_COLUMN_KINDS.get(k, "text") for k in fields]
    cols = [columns[k] for k in fields]
    n = len(cols[0])
    for start in range(0, n, _ENCODE_CHUNK):
        end = min(n, start + _ENCODE_CHUNK)
        encoded = [_encode_column(kind, pre, col[start:end]) for kind, pre, col in zip(kinds, prefixes, cols)]
        encoded.append(["}"] * (end - start))
        yield from map("".join, zip(*encoded))


class BadVerdictFile(ValidationFailed):
    """A verdict file that does not validate: bad input to whichever command reads it (exit 2)."""

    exit_code = 2


def _check_kind_and_version(obj: dict[str, Any], p: Path) -> None:
    """Refuse other documents (a manifest, a release.json) and unknown formats before validating fields."""
    kind = obj.get("kind")
    if isinstance(kind, str) and kind != "verdicts":
        raise AuditError(f"is a {kind!r} document, not a verdict file (kind 'verdicts', written by `audit grade`)",
                         path=str(p), field="kind")
    version = obj.get("schema_version")
    if isinstance(version, int) and version > VERDICT_FILE_SCHEMA_VERSION:
        raise AuditError(f"schema_version {version} is newer than this audit reads "
                         f"({VERDICT_FILE_SCHEMA_VERSION}); upgrade audit", path=str(p), field="schema_version")
    if isinstance(version, int) and version < 1:
        raise AuditError(f"schema_version {version} is not one this audit reads ({VERDICT_FILE_SCHEMA_VERSION})",
                         path=str(p), field="schema_version")


def _read_bytes(p: Path) -> bytes:
    """The verdict file's bytes, read once: every check and every row a reader uses come from them."""
    if not p.is_file():
        raise AuditError("no such file", path=str(p))
    try:
        return read_regular(p)
    except OSError as e:
        raise AuditError(f"unreadable: {e.strerror or e}", path=str(p)) from None


def load_verdict_file(path: str | Path) -> VerdictFile:
    """Read and validate a verdict file; errors name the file, row and field.

    JSON is read strictly (a key twice, NaN, nesting too deep: refused). When the file names a
    Parquet copy of its rows, both pins are checked and the copy must hold the same rows (a
    reader of the copy and a reader of the JSON see one grading, or neither reads it).
    """
    p = Path(path)
    return _load(p, _read_bytes(p))


def _load(p: Path, data: bytes) -> VerdictFile:
    try:
        obj = loads_strict(data)
    except JsonError as e:
        row, field, message = _locate(data, e)
        raise AuditError(message, path=str(p), row=row, field=field) from None
    if not isinstance(obj, dict):
        raise AuditError("not a JSON verdict file: expected an object", path=str(p))
    _check_unicode(obj, p, data)
    _check_kind_and_version(obj, p)
    try:
        vf = VerdictFile.model_validate(obj)
    except pydantic.ValidationError as e:
        from audit.packages.validate import pydantic_problems

        problems = pydantic_problems(str(p), None, e)
        # Rows are addressed as items.N: report them as rows (1-based).
        fixed = []
        for pr in problems:
            if pr.field and pr.field.startswith("items."):
                idx, _, rest = pr.field[6:].partition(".")
                if idx.isdigit():
                    fixed.append(type(pr)(pr.path, _unquoted(pr.message), int(idx) + 1, rest or None))
                    continue
            fixed.append(type(pr)(pr.path, _unquoted(pr.message), pr.row, pr.field))
        raise BadVerdictFile(str(p), fixed) from None
    if vf.rows_file is not None:
        if vf.rows_file.json_rows_sha256 is not None:
            _check_json_pin(p, data, vf.rows_file)
        side = _read_sidecar(p, vf.rows_file)
        if not _same_rows(side, _rows_to_table(vf.items)):
            raise AuditError(f"its Parquet copy {vf.rows_file.path} holds other rows than its JSON rows (one of "
                             f"them was edited after grading)", path=str(p), field="rows_file")
    return vf


_QUOTED = re.compile(r" \(got [\'\"\[{].*\)$")


def _unquoted(message: str) -> str:
    """A row problem without the text it quotes: a row's value may be protected text (numbers stay)."""
    return _QUOTED.sub("", message)


def _check_unicode(obj: dict, p: Path, data: bytes) -> None:
    """Refuse a lone surrogate (a `\\uD800`-`\\uDFFF` escape without its pair) in any key or value, naming
    the row and field: it is not Unicode text, and every writer of it (UTF-8, Parquet) would crash."""
    if not _SURROGATE.search(data):
        return
    lone = re.compile("[\ud800-\udfff]")

    def first(value: Any, path: str) -> tuple[str, str] | None:
        if isinstance(value, str):
            m = lone.search(value)
            return (path, m.group()) if m else None
        if isinstance(value, dict):
            for k, v in value.items():
                q = f"{path}.{k}" if path else str(k)
                found = first(k, q) if lone.search(k) else first(v, q)
                if found:
                    return found
        elif isinstance(value, list):
            for i, v in enumerate(value):
                found = first(v, f"{path}.{i}" if path else str(i))
                if found:
                    return found
        return None

    found = first(obj, "")
    if found is None:
        return
    field, char = found
    row = None
    if field.startswith("items."):
        idx, _, rest = field[6:].partition(".")
        if idx.isdigit():
            row, field = int(idx) + 1, rest or "items"
    raise AuditError(f"invalid Unicode: a lone surrogate (U+{ord(char):04X}); text must be UTF-8",
                     path=str(p), row=row, field=field)


_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_KEY = re.compile(rb'"([A-Za-z_][A-Za-z0-9_]*)":')


def _check_utf8(p: Path, data: bytes, items_at: int) -> None:
    """Refuse bytes that are not UTF-8 (a surrogate encoded as bytes, a stray 0xFF) before any reader
    sees them (pyarrow's JSON reader takes them into a string column), naming the row and field."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        row = field = None
        if 0 <= items_at < e.start:
            row = data.count(b"\n", items_at + len(_ITEMS_MARKER), e.start) or None
        line = data[data.rfind(b"\n", 0, e.start) + 1:e.start]
        keys = _KEY.findall(line)
        field = keys[-1].decode() if keys else None
        raise AuditError(f"not valid UTF-8 at byte {e.start}", path=str(p), row=row, field=field) from None


def _locate(data: bytes, e: JsonError) -> tuple[int | None, str | None, str]:
    """(row, field, message) of a JSON error: the row is found when the file has audit's layout."""
    i = data.find(_ITEMS_MARKER)
    if i >= 0:
        for n, line in enumerate(data[i + len(_ITEMS_MARKER):].split(b"\n")[1:], 1):
            line = line.strip().rstrip(b",")
            if not line.startswith(b"{"):
                break
            obj, err = parse_object(line)
            if err:
                return n, getattr(err, "field", None), str(err)
    return None, e.field, str(e) if e.field else f"not a JSON verdict file: {e}"


def _check_json_pin(p: Path, data: bytes, ref: RowsFileRef) -> None:
    i = data.find(_ITEMS_MARKER)
    if i < 0 or sha256_bytes(data[i + len(_ITEMS_MARKER):]) != ref.json_rows_sha256:
        raise AuditError("its rows differ from the ones recorded beside its Parquet copy (the JSON rows were edited "
                         "after grading)", path=str(p), field="items")


def _same_rows(a: Any, b: Any) -> bool:
    """The same rows in FRAME_COLUMNS, whatever their order."""
    if a.num_rows != b.num_rows:
        return False
    a, b = a.select(list(FRAME_COLUMNS)), b.select(list(FRAME_COLUMNS)).cast(a.select(list(FRAME_COLUMNS)).schema)
    if a.num_rows > 1:
        a, b = a.take(_sort_indices(a)), b.take(_sort_indices(b))
    return a.equals(b)


# --------------------------------------------------------------------------- rows as a table
#
# A million-row verdict file is ~250 MB of JSON: validating it row by row with
# pydantic takes tens of seconds and gigabytes. `audit diff` and `audit release`
# read the rows as an Arrow table instead: from the Parquet sidecar when the file
# names one (pinned by sha256), else from the one-row-per-line layout that
# `dump_verdict_file` writes, parsed by pyarrow's JSON reader with a strict schema.
# Anything else (foreign formatting, a row pyarrow rejects) falls back to the full
# `load_verdict_file`, whose errors name the row and field.

FRAME_COLUMNS = ("item_id", "sample", "attempt", "answer", "rule", "verdict", "status", "reason", "reference",
                 "response_sha256")
"""Columns of the frame `read_rows` returns (`span` and `detail` stay in the JSON and the sidecar)."""

_REQUIRED_COLUMNS = ("item_id", "sample", "verdict", "status", "reason")

_ITEMS_MARKER = b'\n  "items": '


def rows_arrow_schema() -> Any:
    """The Arrow schema of the Parquet sidecar: every VerdictRow field, `detail` as canonical JSON text."""
    import pyarrow as pa

    return pa.schema([
        ("item_id", pa.string()), ("sample", pa.int64()), ("attempt", pa.int64()), ("answer", pa.string()),
        ("rule", pa.string()), ("span", pa.list_(pa.int64())), ("verdict", pa.string()),
        ("status", pa.string()), ("reason", pa.string()), ("reference", pa.string()), ("detail", pa.string()),
        ("response_sha256", pa.string()),
    ])


def _json_rows_schema() -> Any:
    # What pyarrow's JSON reader must find in each row; `detail` is read by inference, then dropped.
    schema = rows_arrow_schema()
    return schema.remove(schema.get_field_index("detail"))


def write_rows_parquet(rows_df: Any, path: str | Path, *, atomic: bool = True) -> RowsFileRef:
    """Write the Parquet sidecar of a verdict file; same rows give the same bytes.

    `rows_df` is a pandas DataFrame with VerdictRow columns (`item_id`, `sample`, `verdict`,
    `status`, `reason` required; the others may be missing: null; `detail` may hold dicts or
    JSON text), or a dict of such columns as lists (no DataFrame to build: faster for a
    million rows). Rows are sorted by item_id then sample, like `items`. Bytes are stable for
    a given pyarrow version (the file's `created_by` names it). The returned ref's `path` is
    the file name: put the sidecar beside the verdict file. The file appears whole (temporary
    name, fsync, rename) unless `atomic` is False (`path` is then a temporary name already).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = Path(path)
    lists = isinstance(rows_df, dict)
    names = set(rows_df) if lists else set(rows_df.columns)
    missing = [c for c in _REQUIRED_COLUMNS if c not in names]
    if missing:
        raise AuditError(f"rows lack column(s) {', '.join(missing)}", path=str(p))
    n = len(rows_df["item_id"]) if lists else len(rows_df)
    schema = rows_arrow_schema()
    arrays = []
    for f in schema:
        if f.name not in names:
            arrays.append(pa.array(["{}"] * n if f.name == "detail" else [None] * n, f.type))
            continue
        col = rows_df[f.name]
        if f.name == "detail":
            values = [v if isinstance(v, str) else dumps(v) if isinstance(v, dict) else "{}"
                      for v in (col if lists else col.tolist())]
            arrays.append(pa.array(values, pa.string()))
        elif f.name == "span":
            values = col if lists else col.tolist()
            if set(map(type, values)) <= {list, tuple, type(None)}:
                arrays.append(pa.array(values, f.type))  # what the loop below does, in one call
            else:
                arrays.append(pa.array([None if v is None or (isinstance(v, float) and v != v) else list(v)
                                        for v in values], f.type))
        else:
            try:
                arrays.append(pa.array(col, f.type, from_pandas=True))
            except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
                raise AuditError(f"column {f.name}: {e}", path=str(p)) from None
    table = pa.Table.from_arrays(arrays, schema=schema)
    _check_table(table, str(p))
    if table.num_rows > 1 and not _sorted_unique(table):
        table = table.take(_sort_indices(table))
    tmp = _temp_name(p.parent, p.name) if atomic else p  # not atomic: `p` is already a temporary name
    try:
        pq.write_table(table, tmp, compression="zstd", compression_level=3, row_group_size=1 << 20,
                       use_dictionary=True, write_statistics=True, store_schema=True)
        with open(tmp, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
            os.fsync(f.fileno())
        if atomic:
            os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return RowsFileRef(path=p.name, sha256=digest, rows=n)


def read_rows(vf_path: str | Path) -> Any:
    """The rows of a verdict file as a pandas DataFrame with `FRAME_COLUMNS`.

    Reads the Parquet sidecar when the file names one (its sha256 and row count are
    checked first), else streams the JSON rows. `attempt` is a nullable Int64 column;
    text columns use pandas' string dtype with nulls for missing values.
    """
    _, table, _ = read_verdict_table(vf_path)
    return table_to_frame(table)


def table_to_frame(table: Any) -> Any:
    """An Arrow rows table (see `read_verdict_table`) as a pandas DataFrame with `FRAME_COLUMNS`."""
    import pandas as pd
    import pyarrow as pa

    return table.select(list(FRAME_COLUMNS)).to_pandas(
        types_mapper={pa.int64(): pd.Int64Dtype()}.get)


def read_verdict_header(path: str | Path) -> VerdictFile:
    """The verdict file's header (everything but the rows), validated; `items` is empty.

    Reads only up to the `items` key when the file has `dump_verdict_file`'s layout.
    """
    p = Path(path)
    head = _read_head(p)
    if head is not None:
        try:
            return _validate_header(p, head)
        except AuditError:
            pass
    vf = load_verdict_file(p)
    return vf.model_copy(update={"items": []})


@dataclass(frozen=True)
class VerdictTable:
    """A verdict file as one read gave it: header (empty `items`), rows, where they came from, and the
    sha256 of the bytes read (so a release names the file whose rows it published)."""

    header: VerdictFile
    table: Any
    source: str
    sha256: str


def read_verdict_table(path: str | Path) -> tuple[VerdictFile, Any, str]:
    """(header with empty `items`, rows as an Arrow table, where the rows came from); see `_verdict_table`.
    Nothing is hashed but what the pins need: `load_verdict_table` adds the digest of the bytes read."""
    p = Path(path)
    return _verdict_table(p, _read_bytes(p))


def load_verdict_table(path: str | Path) -> VerdictTable:
    """`read_verdict_table` with the sha256 of the bytes it read (so a release names the file whose rows it
    published)."""
    p = Path(path)
    data = _read_bytes(p)
    return VerdictTable(*_verdict_table(p, data), sha256_bytes(data))


def _verdict_table(p: Path, data: bytes) -> tuple[VerdictFile, Any, str]:
    """The verdict file's header and rows, from one read of its bytes.

    The source is `parquet` (the sidecar), `json-stream` (the one-row-per-line layout) or
    `json` (a full load, for other formatting). The table has every FRAME_COLUMNS column;
    rows are unique by (item_id, sample). Both pins are checked wherever either copy is read:
    taking the sidecar, its sha256 and the JSON rows' sha256; taking the JSON rows, theirs and
    the sidecar's. A file whose sidecar does not pin the JSON rows (older audit) is read from its
    JSON rows. What the pins cannot tell (a forger who rewrites a copy and its pin) `audit
    reproduce` does: it regrades and compares both copies.
    """
    i = data.find(_ITEMS_MARKER)
    _check_utf8(p, data, i)
    head = data[:i] if i >= 0 else None
    header = None
    if head is not None:
        try:
            header = _validate_header(p, head)
        except AuditError:
            header = None  # the full load below names the problem
    if header is not None:
        ref = header.rows_file
        if ref is not None and ref.json_rows_sha256 is not None:
            _check_json_pin(p, data, ref)
            return header, _read_sidecar(p, ref), "parquet"
        table = _read_json_stream(data, len(head))
        if table is not None:
            _check_table(table, str(p))
            if ref is not None:
                _read_sidecar(p, ref)  # its pin holds, though its rows are not the ones read
            return header, table, "json-stream"
    vf = _load(p, data)  # raises with row and field on any problem; checks the pair
    table = _rows_to_table(vf.items)
    _check_table(table, str(p))
    return vf.model_copy(update={"items": []}), table, "json"


def _read_head(p: Path) -> bytes | None:
    """Bytes of the header, up to (not including) the top-level `items` key; None if not found."""
    buf = bytearray()
    with open(p, "rb") as f:
        while chunk := f.read(1 << 20):
            start = max(0, len(buf) - len(_ITEMS_MARKER))
            buf += chunk
            i = buf.find(_ITEMS_MARKER, start)
            if i >= 0:
                return bytes(buf[:i])
    return None


def _validate_header(p: Path, head: bytes) -> VerdictFile:
    text = head.rstrip()
    if not text.endswith(b","):
        raise AuditError("not the dump_verdict_file layout", path=str(p))
    try:
        obj = loads_strict(text[:-1] + b"\n}")
    except JsonError as e:
        raise AuditError(str(e), path=str(p), field=e.field) from None
    if not isinstance(obj, dict) or "items" in obj:
        raise AuditError("not the dump_verdict_file layout", path=str(p))
    _check_unicode(obj, p, head)
    _check_kind_and_version(obj, p)
    obj["items"] = []
    try:
        return VerdictFile.model_validate(obj)
    except pydantic.ValidationError:
        raise AuditError("header does not validate", path=str(p)) from None


def _read_sidecar(p: Path, ref: RowsFileRef) -> Any:
    """The sidecar's rows, parsed from the bytes whose sha256 was checked (never from the path again)."""
    import pyarrow as pa

    from audit.packages.layout import ParquetBound, open_parquet, parquet_batches

    side = p.parent / ref.path
    where = f"{p}: rows_file {ref.path}"
    if not side.is_file() or side.is_symlink():
        raise AuditError("the Parquet rows file it names is missing", path=where)
    try:
        data = read_regular(side)
    except OSError as e:
        raise AuditError(f"unreadable: {e.strerror or e}", path=where) from None
    digest = sha256_bytes(data)
    if digest != ref.sha256:
        raise AuditError(f"sha256 is {digest}, the verdict file says {ref.sha256} (the file was altered)",
                         path=where)
    try:
        # Bounded as a package's Parquet file: footer and page headers checked before decoding, each
        # batch's decoded size (a value repeated through a dictionary counted every time) before it is decoded.
        pf = open_parquet(data)
        meta = pf.metadata
        # Before decoding: the row count it declares, and a decoded size in proportion to it (a few
        # hundred bytes a row; a small file that decodes to gigabytes is refused, not decoded).
        if meta.num_rows != ref.rows:
            raise AuditError(f"has {meta.num_rows} rows, the verdict file says {ref.rows}", path=where)
        decoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if decoded > max(64 << 20, 64 * len(data), 4096 * ref.rows):
            raise AuditError(f"decodes to {decoded:,} bytes, far more than its {ref.rows:,} rows can hold",
                             path=where)
        batches = list(parquet_batches(pf, len(data), 1 << 16, columns=list(FRAME_COLUMNS)))
        table = pa.Table.from_batches(batches) if batches else pf.read(columns=list(FRAME_COLUMNS))
        for i, f in enumerate(table.schema):  # text columns were read as dictionaries
            if pa.types.is_dictionary(f.type):
                table = table.set_column(i, f.name, table.column(i).cast(f.type.value_type))
    except AuditError:
        raise
    except ParquetBound as e:
        raise AuditError(str(e), path=where) from None
    except Exception as e:  # pyarrow raises several types for damaged files
        raise AuditError(f"not a readable Parquet rows file: {e}", path=where) from None
    if table.num_rows != ref.rows:
        raise AuditError(f"has {table.num_rows} rows, the verdict file says {ref.rows}", path=where)
    expected = _json_rows_schema()
    for name in FRAME_COLUMNS:
        if not table.schema.field(name).type.equals(expected.field(name).type):
            raise AuditError(f"column {name} has type {table.schema.field(name).type}", path=where)
    _check_table(table, where)
    return table


_LONG_LINE = 16 << 10
"""Rows longer than this are parsed by Python first: pyarrow's JSON reader crashes (SIGSEGV) on
JSON nested tens of thousands deep, which needs a line this long; Python refuses it cleanly."""


def _read_json_stream(data: bytes, head_len: int) -> Any | None:
    """Rows of the one-row-per-line layout via pyarrow's JSON reader; None when the layout differs or
    a row needs the strict reader (NaN or Infinity, a row that may nest too deeply, a key twice)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.json as pj

    start = head_len + len(_ITEMS_MARKER)
    tail = b"\n  ]\n}\n"
    if data[start:start + 3] == b"[]\n" and data[start + 3:].strip() == b"}":
        return pa.Table.from_pylist([], schema=_json_rows_schema()).select(list(FRAME_COLUMNS))
    if not (data[start:start + 6] == b"[\n    " and data.endswith(tail)):
        return None
    body = data[start + 6:-len(tail)]
    if b"NaN" in body or b"Infinity" in body:  # pyarrow reads them as numbers; JSON has none (maybe in text)
        return None
    # Rows are compact JSON: `,\n    ` separates them and cannot occur inside one.
    ndjson = body.replace(b",\n    ", b"\n")
    del body
    ends = np.flatnonzero(np.frombuffer(ndjson, dtype=np.uint8) == 10)
    starts = np.concatenate([[0], ends + 1])
    ends = np.concatenate([ends, [len(ndjson)]])
    for i in np.flatnonzero(ends - starts > _LONG_LINE):
        try:
            loads_strict(ndjson[starts[i]:ends[i]])
        except JsonError:
            return None
    schema = _json_rows_schema()
    for behaviour in ("infer", "ignore"):
        try:
            table = pj.read_json(pa.py_buffer(ndjson), read_options=pj.ReadOptions(block_size=16 << 20),
                                 parse_options=pj.ParseOptions(explicit_schema=schema,
                                                               unexpected_field_behavior=behaviour))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            # "infer" fails when `detail` objects disagree on a key's type; retry ignoring them.
            continue
        extra = [n for n in table.schema.names if n not in schema.names and n != "detail"]
        if extra:
            return None  # an unknown field: let the full load name it
        return table.select(list(FRAME_COLUMNS))
    return None


def _rows_to_table(rows: list[VerdictRow]) -> Any:
    import pyarrow as pa

    schema = _json_rows_schema().remove(5)  # no span
    cols: dict[str, list[Any]] = {c: [] for c in FRAME_COLUMNS}
    for r in rows:
        for c in FRAME_COLUMNS:
            cols[c].append(getattr(r, c))
    return pa.Table.from_pydict(cols, schema=pa.schema([schema.field(c) for c in FRAME_COLUMNS]))


def _sort_indices(table: Any) -> Any:
    import pyarrow.compute as pc

    return pc.sort_indices(table, sort_keys=[("item_id", "ascending"), ("sample", "ascending")])


def _check_table(table: Any, where: str) -> None:
    """Required columns non-null, verdicts known, (item_id, sample) unique: vectorised checks."""
    import pyarrow.compute as pc

    for name in _REQUIRED_COLUMNS:
        col = table.column(name)
        if col.null_count:
            row = int(pc.index(pc.is_null(col), True).as_py()) + 1
            raise AuditError("missing required field", path=where, row=row, field=name)
    for name in ("sample", "attempt"):  # the bounds the row model gives (MAX_COUNT), for every reader
        col = table.column(name)
        for bad, what in ((pc.less(col, 0), "greater than or equal to 0"),
                          (pc.greater(col, MAX_COUNT), f"less than or equal to {MAX_COUNT}")):
            if pc.any(bad).as_py():
                row = int(pc.index(pc.fill_null(bad, False), True).as_py())
                raise AuditError(f"Input should be {what} (got {col[row].as_py()})", path=where, row=row + 1,
                                 field=name)
    bad = pc.invert(pc.is_in(table.column("verdict"), value_set=_pa_strings(VERDICTS)))
    if pc.any(bad).as_py():
        row = int(pc.index(bad, True).as_py())
        raise AuditError(f"verdict must be one of {', '.join(VERDICTS)}", path=where, row=row + 1,
                         field="verdict")  # the value is not quoted: it may be protected text
    if table.num_rows > 1 and not _sorted_unique(table):
        keys = table.select(["item_id", "sample"]).group_by(["item_id", "sample"]).aggregate([])
        if keys.num_rows != table.num_rows:  # named by rows, not by id: an id may be protected text
            first: dict[tuple[Any, Any], int] = {}
            for n, key in enumerate(zip(table.column("item_id").to_pylist(), table.column("sample").to_pylist()), 1):
                if key in first:
                    raise AuditError(f"duplicate row: the item_id and sample of row {first[key]}", path=where,
                                     row=n, field="items")
                first[key] = n


def _sorted_unique(table: Any) -> bool:
    """True when rows are strictly increasing by (item_id, sample): then they are unique (cheap check)."""
    import pyarrow.compute as pc

    ids, samples = table.column("item_id"), table.column("sample")
    n = table.num_rows
    a_id, b_id = ids.slice(0, n - 1), ids.slice(1)
    a_s, b_s = samples.slice(0, n - 1), samples.slice(1)
    ok = pc.or_(pc.less(a_id, b_id), pc.and_(pc.equal(a_id, b_id), pc.less(a_s, b_s)))
    return bool(pc.all(ok).as_py())


def _pa_strings(values: tuple[str, ...]) -> Any:
    import pyarrow as pa

    return pa.array(list(values), pa.string())

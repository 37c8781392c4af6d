"""Package kinds: each kind is one registered `Kind`, its whole definition in one place.

A `Kind[V]` names its row schemas (with the fields that key each), the document schemas its files are
listed under, the JSON Schemas of its other documents, a typed model of its manifest's
`provenance.extra`, the kind of package it links to (telemetry: its throughput run), `read(pkg, label)`,
which reads a validated package back as a `V`, recomputes what can be recomputed, checks the link and
refuses a mismatch, and `show(view)`, the lines `audit show` prints of that `V`.
Every list of kinds, row models, row keys and document schemas derives from this catalog
(`kind_names()`, `ROW_MODELS`, `ROW_KEYS` and `DOCUMENT_SCHEMAS` here, `audit.schemas`, `audit show`, the
claims recipes, and `audit.packages.validate`, which refuses a manifest whose kind is not registered).

Each domain module registers its kind with `register_kind` (`audit.verdicts.kind`: verdicts;
`audit.release.kind`: release; `audit.bench.store`: throughput and telemetry; `audit.trace.package`:
profile; `audit.floor.package`: checkpoint-headers; `audit.judge.kind`: judge-calls). The kinds with no
domain module of their own (responses, items) are registered here. Adding a kind is its module, its schema files and one
line in `KIND_MODULES` (when its module is not listed yet).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict

from audit.errors import AuditError, field_errors
from audit.models import ItemRow, Manifest, Record, ResponseRow
from audit.registry import Catalog, catalog, duplicate_error

if TYPE_CHECKING:
    from audit.packages.read import Package

KIND_MODULES = ("audit.packages.kinds", "audit.verdicts.kind", "audit.release.kind", "audit.bench.store",
                "audit.trace.package", "audit.floor.package", "audit.taskruns.package", "audit.judge.kind")
"""Modules that register package kinds on import, in the order the kinds are listed."""


class Extra(BaseModel):
    """Base of a kind's typed `provenance.extra`: the keys a writer records are typed, further keys (an
    importer's, a newer writer's) are kept as they are. Lax types: the manifest was validated strictly."""

    model_config = ConfigDict(extra="allow", frozen=True)


class NoExtra(Extra):
    """A kind whose writers record nothing in `provenance.extra` (whatever is there is kept, unread)."""


V = TypeVar("V")
"""What a kind's reader gives back (a `Throughput`, a `CheckedProfile`, ...)."""

Reader = Callable[["Package", str], V]
"""`reader(pkg, label)`: the validated package read back, its figures recomputed; AuditError naming `label`."""
Viewer = Callable[[V], list[str]]
"""`viewer(view)`: the lines `audit show` prints for what the reader gave."""


@dataclass(frozen=True)
class Link:
    """The package of another kind a package belongs to, recorded in its `provenance.extra` by id and content
    digest (a telemetry package names its throughput run)."""

    kind: str
    """The kind linked to."""
    field: str
    """The `provenance.extra` key that records it: an object with `package_id` and `digest`."""


@dataclass(frozen=True)
class Kind(Generic[V]):
    """One package kind (`manifest.kind`), registered once by the module that writes and reads it; `V` is what
    `read` gives back."""

    name: str
    """The manifest's `kind`."""
    description: str
    """What a package of the kind holds, one line."""
    rows: Mapping[str, type[Record]] = field(default_factory=dict)
    """Row schemas its data files follow, by schema id (each id is registered by one kind only)."""
    row_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Fields that must be unique together within one file of each row schema."""
    documents: Mapping[str, type[Record]] = field(default_factory=dict)
    """Document schemas a file may be listed under in the manifest (validated as one JSON document)."""
    schemas: Mapping[str, type[BaseModel]] | Callable[[], Mapping[str, type[BaseModel]]] = field(
        default_factory=dict)
    """JSON Schemas of its other documents (a summary.json listed as text, checked by `read`), or a function
    giving them (so a module that is slow to import is imported only when the schemas are generated)."""
    extra: type[Extra] = NoExtra
    """The typed model of `provenance.extra`."""
    reader: Reader[V] | None = field(default=None, repr=False)
    """`reader(pkg, label)`: the package read back, its figures recomputed (AuditError naming `label` on a
    mismatch). None for a kind with nothing to recompute (`read` gives None)."""
    viewer: Viewer[V] | None = field(default=None, repr=False)
    """`viewer(view)`: the lines `audit show` prints for what `reader` gave."""
    link: Link | None = None
    """The package of another kind this kind's packages belong to, checked by `read(..., linked=)`."""
    also_holds: tuple[str, ...] = ()
    """Row schemas of other kinds that a package of this kind may also hold (a responses package, its items)."""

    def holds(self, schema: str) -> bool:
        """Whether a package of this kind may list a file of `schema` (its own, `also_holds`, or text)."""
        return schema in self.rows or schema in self.documents or schema in self.also_holds or schema == "text"

    def schema_models(self) -> dict[str, type[BaseModel]]:
        """Every JSON Schema of the kind: its rows, documents and other documents, by schema id."""
        more = self.schemas() if callable(self.schemas) else self.schemas
        return {**self.rows, **self.documents, **more}

    def extra_of(self, manifest: Manifest, label: str | None = None) -> Extra:
        """The manifest's `provenance.extra` through the kind's model: AuditError (at `label`) naming the
        first field that does not fit (`manifest.json: field provenance.extra.FIELD: missing required field`)."""
        unread = AuditError(f"manifest.json: schema_version {manifest.schema_version}: its provenance is not "
                            f"covered by the package's digest, so it is not read (a {self.name} package is read "
                            f"through its provenance.extra); write the package again with audit 0.2.0 or later",
                            path=label)
        if manifest.unpinned_provenance is not None and self.link is not None:
            raise unread  # (its link to the package it belongs to is recorded there)
        try:
            return self.extra.model_validate(manifest.provenance.extra)
        except pydantic.ValidationError as e:
            if manifest.unpinned_provenance is not None:  # a schema 1 manifest: its provenance is set aside
                raise unread from None
            first = field_errors(e)[0]
            raise AuditError(f"manifest.json: field provenance.extra.{first.field}: {first.message}",
                             path=label) from None

    def read(self, pkg: Package, label: str | None = None, *, linked: Package | None = None) -> V:
        """The validated package `pkg` read back: its `extra` checked, its link to `linked` checked when given
        (`check_link`), what can be recomputed recomputed and compared (AuditError or ValidationFailed, naming
        `label`, by default where `pkg` was opened, on a mismatch). The caller closes `pkg`."""
        where = str(pkg.source) if label is None else label
        if pkg.kind != self.name:
            raise AuditError(f"is a {pkg.kind!r} package, expected {self.name!r}", path=where)
        self.extra_of(pkg.manifest, where)
        if linked is not None:
            self.check_link(pkg, linked, where)
        return self.reader(pkg, where) if self.reader is not None else None  # type: ignore[return-value]

    def check_link(self, pkg: Package, linked: Package, label: str | None = None) -> None:
        """AuditError (at `label`) unless `pkg` records `linked` as the package it belongs to, by content
        digest: `belongs to throughput package ID (digest ...), not ID (digest ...)`."""
        where = str(pkg.source) if label is None else label
        if self.link is None:
            raise AuditError("belongs to no package of another kind", path=where)
        if linked.kind != self.link.kind:
            raise AuditError(f"belongs to a {self.link.kind} package, not to a {linked.kind} package", path=where)
        recorded = getattr(self.extra_of(pkg.manifest, where), self.link.field, None)
        package_id, digest = (getattr(recorded, "package_id", None), getattr(recorded, "digest", None))
        if digest != linked.digest:
            raise AuditError(f"belongs to {self.link.kind} package {package_id} (digest {str(digest)[:12]}...), "
                             f"not {linked.manifest.package_id} (digest {linked.digest[:12]}...)", path=where)

    def show(self, view: V) -> list[str]:
        """The lines `audit show` prints for `view` (what `read` gave)."""
        return self.viewer(view) if self.viewer is not None and view is not None else []


KINDS: Catalog[Kind[Any]] = catalog("package kind", homes=KIND_MODULES)
"""Every package kind, by name, in registration order."""


def register_kind(kind: Kind[V], home: str) -> Kind[V]:
    """Register `kind` from module `home` (pass `__name__`); DuplicateError for a kind name, or a row or
    document schema id, registered twice."""
    for schema in (*kind.rows, *kind.documents):
        owner = next((k for k in KINDS._entries.values() if schema in k.rows or schema in k.documents), None)
        if owner is not None and owner.name != kind.name:
            raise duplicate_error("row or document schema", repr(schema))
    return KINDS.add(kind.name, kind, home=home)


def get_kind(name: str) -> Kind[Any]:
    """The kind named `name`; UnknownError listing the known kinds otherwise."""
    return KINDS[name]


def kind_names() -> tuple[str, ...]:
    """Every kind's name, in the order of `KIND_MODULES`."""
    return tuple(KINDS)


def kind_schemas() -> dict[str, type[BaseModel]]:
    """Every JSON Schema the kinds define (rows, documents and the rest), by schema id."""
    return {s: m for k in KINDS.values() for s, m in k.schema_models().items()}


class KindTable(Mapping[str, Any]):
    """One table of every kind's entries by schema id (`rows`, `row_keys` or `documents`), read through the
    catalog: a lookup imports kind modules only until one registers the schema id (so `audit.models` can
    offer `ROW_MODELS` without importing every module that registers a kind); iterating imports them all."""

    def __init__(self, part: str):
        self._part = part

    def _of(self, kind: Kind[Any]) -> Mapping[str, Any]:
        table: Mapping[str, Any] = getattr(kind, self._part)
        return table

    def __getitem__(self, key: str) -> Any:
        # Schema ids are unique across kinds (rows and documents alike): the kind that registers the id answers
        # for every table, so a lookup that finds nothing imports no further than that kind's module.
        kind = KINDS.first(lambda k: key in k.rows or key in k.documents)
        if kind is None or key not in self._of(kind):
            raise KeyError(key)
        return self._of(kind)[key]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter([s for k in KINDS.values() for s in self._of(k)])

    def __len__(self) -> int:
        return sum(len(self._of(k)) for k in KINDS.values())

    def __repr__(self) -> str:
        return repr(dict(self))


ROW_MODELS: Mapping[str, type[Record]] = KindTable("rows")
"""Every row schema a package file may name, by schema id."""
ROW_KEYS: Mapping[str, tuple[str, ...]] = KindTable("row_keys")
"""Fields that must be unique together within one file of each row schema that has them."""
DOCUMENT_SCHEMAS: Mapping[str, type[Record]] = KindTable("documents")
"""Document schemas a package file may be listed under, by schema id."""


# --------------------------------------------------------------------------- responses and items


@dataclass(frozen=True)
class HeldRows:
    """What `audit show` says of the response and item rows a package holds."""

    responses: list[str]
    items: list[str]


class ItemsPackageRef(Extra):
    """The items package a run read, by id and content digest."""

    package_id: str
    digest: str
    path: str | None = None


class PromptRecord(Extra):
    """The prompt template a run used."""

    template: str | None = None
    fingerprint: str | None = None


class ResponsesExtra(Extra):
    """`provenance.extra` of a responses package. `audit generate` records the keys below (all or none);
    an importer records `import` and `source_files`, `audit pack` what its provenance file holds."""

    run_id: str | None = None
    """The generate run's id (the same across resumed sessions)."""
    generator: str | None = None
    """`audit generate`."""
    config: dict[str, Any] | None = None
    """The run's configuration as given."""
    items_package: ItemsPackageRef | None = None
    """The items package the prompts came from."""
    prompt: PromptRecord | None = None
    """The prompt template used."""
    context_window: int | None = None
    """The served model's context window, in tokens."""
    generation_config: dict[str, Any] | None = None
    """The model's `generation_config.json`, when it has one."""
    model_files: dict[str, Any] | None = None
    """sha256 of the model's small files and the sizes of its weights."""
    sampling_check: dict[str, Any] | None = None
    """How the sampling parameters sent were checked against what the server applied."""
    sessions: list[dict[str, Any]] | None = None
    """One entry per session of the run: its servers, launch and checks."""
    counts: dict[str, Any] | None = None
    """Rows kept, excluded, failed and re-sampled."""


def _response_lines(pkg: Package) -> list[str]:
    items, samples, attempts = set(), set(), Counter[int]()
    finish: Counter[str] = Counter()
    n = empty = excluded = errors = 0
    for r in pkg.iter_rows("response_row.v1"):
        n += 1
        items.add(r.item_id)
        samples.add(r.sample)
        attempts[r.attempt] += 1
        finish[r.finish_reason or "unknown"] += 1
        empty += r.response is None
        excluded += r.excluded is not None
        errors += r.error is not None
    lines = [f"responses  {n} rows: {len(items)} items x {len(samples)} samples; "
             f"attempts {dict(sorted(attempts.items()))}",
             "finish     " + ", ".join(f"{k}={v}" for k, v in sorted(finish.items()))]
    if empty or excluded or errors:
        lines.append(f"missing    {empty} without text ({excluded} excluded, {errors} errors)")
    return lines


def _item_lines(pkg: Package) -> list[str]:
    n = protected = 0
    for it in pkg.iter_rows("item_row.v1"):
        n += 1
        protected += it.protected
    return [f"items      {n} ({protected} protected)"]


def _held_rows(pkg: Package, label: str) -> HeldRows:
    """The response and item rows a package holds (a responses package may hold its items)."""
    return HeldRows(_response_lines(pkg) if pkg.files("response_row.v1") else [],
                    _item_lines(pkg) if pkg.files("item_row.v1") else [])


def _held_rows_view(view: HeldRows) -> list[str]:
    return [*view.responses, *view.items]


RESPONSES = register_kind(Kind(
    "responses", "model responses: one row per (item, sample, attempt)",
    rows={"response_row.v1": ResponseRow}, row_keys={"response_row.v1": ("item_id", "sample", "attempt")},
    extra=ResponsesExtra, reader=_held_rows, viewer=_held_rows_view, also_holds=("item_row.v1",)), __name__)

ITEMS = register_kind(Kind(
    "items", "benchmark items: one row per item, with its reference answer",
    rows={"item_row.v1": ItemRow}, row_keys={"item_row.v1": ("item_id",)}, reader=_held_rows,
    viewer=_held_rows_view), __name__)

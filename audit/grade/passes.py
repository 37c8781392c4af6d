"""Grading a responses package, in three streaming passes over the validated package (see `audit.grade`):
read the items, read every response row's metadata and extract its answer (texts dropped as read), grade the
distinct answers, then decide each (item, sample) row (`audit.grade.decision`)."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as pkg_version
from pathlib import Path
from typing import Any

import pandas as pd

from audit import graders
from audit.errors import AuditError
from audit.fileio import dumps
from audit.grade.decision import AttemptMeta, ItemInfo, alphabet_too_short, choose_attempt, decide, possibly_cut
from audit.models import ItemRow
from audit.packages import Package, open_package
from audit.producer import producer
from audit.specs import GradeConfig, ResolvedConfig, resolve
from audit.summary import summarize
from audit.verdicts import (
    VERDICT_ROW_FIELDS,
    ComponentRef,
    PackageRef,
    Policies,
    VerdictFile,
    VerdictRow,
    encode_rows,
    write_verdict_lines,
)

ENVIRONMENT_PACKAGES = ("sympy", "latex2sympy2_extended", "math-verify", "antlr4-python3-runtime")
"""Libraries whose versions can change a grader's judgments; recorded in every verdict file."""


class NoItems(AuditError):
    """The responses package holds no item rows and no items package was named (the CLI adds its flag)."""


def _ref(component: Any) -> ComponentRef | None:
    if component is None:
        return None
    return ComponentRef(name=component.name, version=component.version, fingerprint=component.fingerprint)


def environment() -> dict[str, str]:
    env = {"python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    for name in ENVIRONMENT_PACKAGES:
        try:
            env[name] = pkg_version(name)
        except PackageNotFoundError:
            env[name] = "not installed"
    return env


# --------------------------------------------------------------------------- items


def _reference(item: ItemRow, field_name: str, where: str) -> str:
    if field_name == "reference":
        return item.reference
    if field_name.startswith("extra."):
        key = field_name[6:]
        value = item.extra.get(key)
        if isinstance(value, str):
            return value
        raise AuditError(f"item {item.item_id!r} has no string extra.{key}", path=where, field=field_name)
    raise AuditError(f"reference field must be `reference` or `extra.KEY`, got {field_name!r}")


def load_items(pkg: Package, reference_field: str) -> dict[str, ItemInfo]:
    items: dict[str, ItemInfo] = {}
    for item in pkg.iter_rows("item_row.v1"):
        if item.item_id in items:
            # Unique within each file is checked on validation; across the files of one package, here.
            raise AuditError(f"item {item.item_id!r} appears in more than one items file", path=str(pkg.source),
                             field="item_id")
        bad = item.extra.get("bad_input")
        items[item.item_id] = ItemInfo(_reference(item, reference_field, str(pkg.source)), item.option_count(),
                                       item.subject, bad if isinstance(bad, str) else None)
    return items


# --------------------------------------------------------------------------- the passes


def _grade_all(grader: Any, tasks: list[tuple[str, str, int | None]],
               workers: int | None = None) -> list[graders.Judgment]:
    """Grade (answer, reference, options) tasks in input order: cheap cases in-process, symbolic
    ones in the graders' worker pool under each item's time budget. Each distinct task is graded
    once (a registered grader version is a pure function of its inputs): K samples giving the
    same answer, or a million letters against ten references, cost one grading each."""
    unique = list(dict.fromkeys(tasks))
    judgments: list[graders.Judgment]
    if isinstance(grader, graders.Grader):
        judgments = graders.grade_many(grader, unique, workers=workers)
    else:
        judgments = [grader.grade(a, r, num_choices=n) for a, r, n in unique]
    if len(unique) == len(tasks):
        return judgments
    by_task = dict(zip(unique, judgments, strict=True))
    return [by_task[t] for t in tasks]


_ROW_ORDER = ("item_id", "sample", "attempt", "response_sha256", "answer", "rule", "span", "verdict", "status",
              "reason", "reference", "detail")
assert VERDICT_ROW_FIELDS == _ROW_ORDER, "grade_package appends row values in this order"

PARQUET_MIN_ROWS = 100_000
"""Gradings with at least this many rows also write their rows as Parquet beside the JSON."""


@dataclass
class Grading:
    """A finished grading: the verdict file's header (empty `items`) and its rows as columns.

    Rows are kept column-wise (lists in VERDICT_ROW_FIELDS order, sorted by item_id then
    sample) so a million rows stay small: values are shared where rows repeat them, `span`
    is a tuple and an empty `detail` is None. `iter_rows()` gives the rows as the model
    dumps them; `to_verdict_file()` builds the full model.
    """

    header: VerdictFile
    columns: dict[str, list[Any]]
    possibly_cut: dict[str | None, int] = dataclasses.field(default_factory=dict)
    """Graded rows whose response has no finish reason and stops mid-sentence, by the rule that read them: a
    labelled heuristic for reports (`audit grade` prints it), never part of a verdict or of the file."""

    @property
    def summary(self) -> Any:
        return self.header.summary

    def __len__(self) -> int:
        return len(self.columns["item_id"])

    def iter_rows(self) -> Iterable[dict[str, Any]]:
        """Each row as `VerdictRow.model_dump(mode="json")` gives it."""
        cols = [self.columns[k] for k in VERDICT_ROW_FIELDS]
        for values in zip(*cols, strict=True):
            row = dict(zip(VERDICT_ROW_FIELDS, values, strict=True))
            if row["span"] is not None:
                row["span"] = list(row["span"])
            if row["detail"] is None:
                row["detail"] = {}
            yield row

    @property
    def items(self) -> list[VerdictRow]:
        return [VerdictRow.model_validate(r) for r in self.iter_rows()]

    def to_verdict_file(self) -> VerdictFile:
        return self.header.model_copy(update={"items": self.items})

    def _sidecar_columns(self) -> dict[str, list[Any]]:
        data = {k: self.columns[k] for k in VERDICT_ROW_FIELDS}
        data["detail"] = ["{}" if not v else dumps(v) for v in data["detail"]]  # canonical JSON text
        return data

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame (`span` as tuples, `detail` as canonical JSON text)."""
        return pd.DataFrame(self._sidecar_columns())

    def write(self, out: str | os.PathLike[str], *, parquet: bool | None = None,
              overwrite: bool = True) -> VerdictFile:
        """Write the verdict file (and, for large sets or when asked, its Parquet rows beside it, named
        after their digest); the two appear together or not at all (see `write_verdict_lines`, which
        says what `overwrite` replaces)."""
        side = parquet or (parquet is None and len(self) >= PARQUET_MIN_ROWS)
        return write_verdict_lines(Path(out), self.header, lambda: encode_rows(self.columns),
                                   sidecar=self._sidecar_columns() if side else None, overwrite=overwrite)


class _GcPause:
    """Pause the cyclic garbage collector while grading.

    Grading keeps millions of small acyclic objects alive (one per response row), and every
    full collection walks all of them: about a fifth of the time on a million rows. Reference
    counting still frees everything as usual; only cycles wait. Graders, whose libraries may
    make cycles, run with the collector as the caller had it (`resumed()`).
    """

    def __enter__(self) -> _GcPause:
        self.enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()

    @contextmanager
    def resumed(self) -> Iterator[None]:
        if self.enabled:
            gc.enable()
        try:
            yield
        finally:
            gc.disable()


PackageSource = str | os.PathLike[str] | Package
"""A package by path (opened and fully validated here), or one the caller already opened (and validated), read
as it is and left open."""


def grade_package(responses: PackageSource, config: ResolvedConfig | GradeConfig, *,
                  items: PackageSource | None = None,
                  out: str | os.PathLike[str] | None = None,
                  base_dir: str | os.PathLike[str] | None = None,
                  parquet: bool | None = None, workers: int | None = None, overwrite: bool = True) -> Grading:
    """Grade a responses package; write the verdict file to `out` (atomically) when given (an existing
    one replaced only with `overwrite`, and only when it is a verdict file).

    `responses` and `items` are paths, or packages already open (`open_package`): those are read as they
    are, not reopened, and left open. `config` is a `ResolvedConfig` (`audit.specs.resolve_config`:
    settings and the components they name), or a `GradeConfig` whose components are looked up in the
    registry.

    One streaming pass over the validated package reads each row's metadata and extracts
    its answer (texts are dropped as soon as they are read); the attempt to grade per
    (item, sample) is chosen afterwards. Package paths are recorded relative to `out`'s
    directory (or `base_dir`).
    """
    with _GcPause() as pause:
        return _grade_package(responses, config, pause, items=items, out=out, base_dir=base_dir,
                              parquet=parquet, workers=workers, overwrite=overwrite)


@contextmanager
def _opened(source: PackageSource) -> Iterator[tuple[Package, str]]:
    """The package, and how errors name it (as the caller gave it); one already open is left open."""
    if isinstance(source, Package):
        yield source, str(source.source)
        return
    with open_package(source) as pkg:
        yield pkg, str(source)


@dataclass(frozen=True, slots=True)
class _Plan:
    """One item as grading needs it: its record and the pair of components that grades it."""

    item_id: str
    """The items package's own string, kept once for every row of the item."""
    info: ItemInfo
    extractor: Any
    grader: Any


def _plans(item_info: dict[str, ItemInfo], resolved: ResolvedConfig) -> dict[str, _Plan]:
    main = (resolved.extractor, resolved.grader)
    mc = (resolved.mc_extractor, resolved.mc_grader)
    plans = {}
    for item_id, info in item_info.items():
        # Mixed benchmarks (HLE) grade items that have options with the multiple-choice pair.
        extractor, grader = (mc[0] or main[0], mc[1] or main[1]) if info.options and (mc[0] or mc[1]) else main
        plans[item_id] = _Plan(item_id, info, extractor, grader)
    return plans


def _read_items(rp: Package, label: str, items: PackageSource | None, reference_field: str,
                out_dir: Path) -> tuple[dict[str, ItemInfo], PackageRef | None]:
    """The items to grade against, and the items package's ref (None when the responses package holds them)."""
    if items is not None:
        with _opened(items) as (ip, items_label):
            if not ip.files("item_row.v1"):
                raise AuditError("holds no item rows", path=items_label)
            return load_items(ip, reference_field), _package_ref(ip, out_dir)
    if rp.files("item_row.v1"):
        return load_items(rp, reference_field), None
    raise NoItems("holds no item rows, and no items package was given", path=label)


def _read_attempt(obj: dict[str, Any], plan: _Plan) -> AttemptMeta:
    """One response row as grading keeps it: its metadata and extracted answer (the text is dropped)."""
    get = obj.get
    response, finish = get("response"), get("finish_reason")
    text = response if isinstance(response, str) else None  # null in a validated row, when not a string
    has_text = text is not None
    chars = len(text) if text is not None else 0
    tokens = get("completion_tokens")
    reported = tokens if isinstance(tokens, int) else None
    extractor = plan.extractor
    if getattr(extractor, "takes_options", False):
        extraction = extractor.extract(text, finish_reason=finish, options=plan.info.options)
    else:
        extraction = extractor.extract(text, finish_reason=finish)
    return AttemptMeta(
        attempt=get("attempt", 0), finish_reason=finish, length=chars if reported is None else reported,
        has_text=has_text, excluded=get("excluded"), error=get("error"), max_tokens=get("max_tokens"),
        extraction=extraction, tokens=reported, chars=chars,
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None,
        at_budget=finish == "stop" and reported is not None and reported == get("max_tokens"),
        cut=finish is None and has_text and possibly_cut(text, finish))


_Key = tuple[str, int]
"""(item_id, sample)."""


@dataclass
class _Attempts:
    """The response rows as read, by (item_id, sample), and the attempt chosen to grade for each."""

    reads: dict[_Key, AttemptMeta | list[AttemptMeta]] = dataclasses.field(default_factory=dict)
    """One attempt, or, for a re-sampled (item, sample), every attempt read (a list only then: a million
    single attempts stay a million objects)."""
    chosen: dict[_Key, tuple[AttemptMeta, dict[str, Any]]] = dataclasses.field(default_factory=dict)
    """For each re-sampled key: the attempt to grade and what was considered (`choose_attempt`)."""

    def add(self, key: _Key, meta: AttemptMeta) -> bool:
        """Keep `meta`; False (and nothing kept) when the key already holds its attempt number."""
        prev = self.reads.setdefault(key, meta)
        if prev is meta:
            return True
        if isinstance(prev, AttemptMeta):
            prev = self.reads[key] = [prev]
        if any(m.attempt == meta.attempt for m in prev):
            return False
        prev.append(meta)
        return True

    def choose(self, policy: str) -> None:
        """Choose the attempt to grade for every re-sampled key under the re-sampling `policy`."""
        self.chosen = {key: choose_attempt(metas, policy) for key, metas in self.reads.items()
                       if isinstance(metas, list)}

    def pick(self, key: _Key) -> tuple[AttemptMeta | None, dict[str, Any] | None]:
        """The attempt graded for `key` (None when the run has no response for it), and what was considered."""
        got = self.reads.get(key)
        if got is None or isinstance(got, AttemptMeta):
            return got, None
        return self.chosen[key]

    def graded(self) -> Iterator[tuple[_Key, AttemptMeta]]:
        """Each key with the attempt graded for it."""
        for key, got in self.reads.items():
            yield key, got if isinstance(got, AttemptMeta) else self.chosen[key][0]


def _read_responses(rp: Package, plans: dict[str, _Plan]) -> _Attempts:
    """Every response row of the package, its answer extracted; refuses rows of unknown items and repeats."""
    attempts = _Attempts()
    for entry, rowno, obj in rp.iter_objects("response_row.v1"):
        plan = plans.get(obj["item_id"])
        if plan is None:
            raise AuditError(f"item {obj['item_id']!r} is not in the items package",
                             path=f"{rp.source}/{entry.path}", row=rowno, field="item_id")
        meta = _read_attempt(obj, plan)
        key = (plan.item_id, obj.get("sample", 0))
        if not attempts.add(key, meta):
            raise AuditError(f"duplicate (item_id={plan.item_id!r}, sample={key[1]}, attempt={meta.attempt}): "
                             f"the package holds this response twice", path=f"{rp.source}/{entry.path}",
                             row=rowno, field="attempt")
    return attempts


_Task = tuple[str, str, int | None]
"""(answer, reference, options): what a grader judges."""


def _grade_answers(attempts: _Attempts, plans: dict[str, _Plan], excluded_ids: frozenset[str], pause: _GcPause,
                   workers: int | None) -> dict[str, dict[_Task, graders.Judgment]]:
    """The judgments of the answers that count, per grader key: each distinct task graded once."""
    tasks: dict[str, tuple[Any, dict[_Task, None]]] = {}
    for key, meta in attempts.graded():
        assert meta.extraction is not None
        answer = meta.extraction.answer
        if answer is None or meta.finish_reason == "length" or key[0] in excluded_ids:
            continue
        plan = plans[key[0]]
        tasks.setdefault(plan.grader.key, (plan.grader, {}))[1][(answer, plan.info.reference, plan.info.options)] = None
    judgments: dict[str, dict[_Task, graders.Judgment]] = {}
    with pause.resumed():
        for grader_key, (grader, distinct) in tasks.items():
            todo = list(distinct)
            judgments[grader_key] = dict(zip(todo, _grade_all(grader, todo, workers), strict=True))
    return judgments


def _verdict_columns(item_ids: list[str], samples: list[int], plans: dict[str, _Plan], attempts: _Attempts,
                     judgments: dict[str, dict[_Task, graders.Judgment]], policies: Policies,
                     excluded_ids: frozenset[str]) -> tuple[dict[str, list[Any]], dict[str | None, int]]:
    """The verdict rows as columns (see Grading), one per (item, sample), and the possibly-cut counts by rule."""
    cols: dict[str, list[Any]] = {k: [] for k in VERDICT_ROW_FIELDS}
    cut: dict[str | None, int] = {}
    (add_item, add_sample, add_attempt, add_sha, add_answer, add_rule, add_span, add_verdict, add_status,
     add_reason, add_reference, add_detail) = [cols[k].append for k in _ROW_ORDER]
    for item_id in item_ids:
        plan = plans[item_id]
        info = plan.info
        graded = judgments.get(plan.grader.key, {})
        short = alphabet_too_short(plan.extractor, info)
        reference = info.reference
        for sample in samples:
            meta, detail = attempts.pick((item_id, sample))
            if meta is None:
                ex = judgment = None
                add_attempt(None)
                add_sha(None)
                add_answer(None)
                add_rule(None)
                add_span(None)
            else:
                ex = meta.extraction
                assert ex is not None
                judgment = graded.get((ex.answer, reference, info.options))
                if meta.cut:
                    cut[ex.rule] = cut.get(ex.rule, 0) + 1
                add_attempt(meta.attempt)
                add_sha(meta.digest)
                add_answer(ex.answer)
                add_rule(ex.rule)
                add_span(ex.span or None)  # a tuple (see Grading)
            decision = decide(meta, ex, judgment, info, item_id, sample, policies, excluded_ids, short)
            if decision.detail:
                detail = {**detail, **decision.detail} if detail else decision.detail
            add_item(item_id)
            add_sample(sample)
            add_verdict(decision.verdict)
            add_status(decision.status)
            add_reason(decision.reason)
            add_reference(reference)
            add_detail(detail or None)  # None when empty (see Grading)
    return cols, cut


def _header(resolved: ResolvedConfig, responses_ref: PackageRef, items_ref: PackageRef | None,
            cols: dict[str, list[Any]], item_info: dict[str, ItemInfo]) -> VerdictFile:
    """The verdict file's header (empty `items`): what graded, with which policies, and the summary of `cols`."""
    config = resolved.config
    df = pd.DataFrame({k: cols[k] for k in ("item_id", "sample", "verdict", "status", "reason", "answer")})
    return VerdictFile(
        benchmark=config.benchmark, responses_package=responses_ref, items_package=items_ref,
        extractor=_ref(resolved.extractor), grader=_ref(resolved.grader), mc_extractor=_ref(resolved.mc_extractor),
        mc_grader=_ref(resolved.mc_grader), reference_field=config.reference_field, producer=producer(),
        environment=environment(), policies=config.policies,
        summary=summarize(df, {i: info.subject for i, info in item_info.items()}), items=[])


def _grade_package(responses: PackageSource, resolved: ResolvedConfig | GradeConfig, pause: _GcPause, *,
                   items: PackageSource | None = None,
                   out: str | os.PathLike[str] | None = None,
                   base_dir: str | os.PathLike[str] | None = None,
                   parquet: bool | None = None, workers: int | None = None, overwrite: bool = True) -> Grading:
    if isinstance(resolved, GradeConfig):
        resolved = resolve(resolved)
    policies = resolved.config.policies
    if base_dir is not None:
        out_dir = Path(base_dir).resolve()
    else:
        out_dir = Path(out).resolve().parent if out is not None else Path.cwd()

    with _opened(responses) as (rp, label):
        if rp.kind != "responses":
            raise AuditError(f"is a {rp.kind!r} package; `audit grade` needs a responses package", path=label)
        item_info, items_ref = _read_items(rp, label, items, resolved.config.reference_field, out_dir)
        responses_ref = _package_ref(rp, out_dir)
        plans = _plans(item_info, resolved)
        attempts = _read_responses(rp, plans)

    excluded_ids = frozenset(policies.exclude)
    unknown = sorted(excluded_ids - item_info.keys())
    if unknown:
        raise AuditError(f"the exclude policy names {len(unknown)} id(s) that are not items (first: {unknown[0]!r})")
    item_ids = sorted(item_info) if policies.scope == "items" else sorted({k[0] for k in attempts.reads})
    samples = sorted({k[1] for k in attempts.reads}) or [0]
    attempts.choose(policies.resampling)
    judgments = _grade_answers(attempts, plans, excluded_ids, pause, workers)
    cols, cut = _verdict_columns(item_ids, samples, plans, attempts, judgments, policies, excluded_ids)
    del attempts, judgments  # before the summary: a million rows' metadata is no longer needed

    grading = Grading(_header(resolved, responses_ref, items_ref, cols, item_info), cols, cut)
    if out is not None:
        grading.header = grading.write(out, parquet=parquet, overwrite=overwrite)
    return grading


def _package_ref(pkg: Package, out_dir: Path) -> PackageRef:
    try:
        rel = os.path.relpath(pkg.source.resolve(), out_dir)
    except ValueError:  # another drive
        rel = str(pkg.source.resolve())
    return PackageRef(package_id=pkg.manifest.package_id, digest=pkg.digest, path=Path(rel).as_posix())

"""`audit diff OLD NEW`: every retraction between two gradings, with the rows whose verdict changed.

Rows are aligned by (item_id, sample); only rows present in both files are
compared, rows in one file only are listed on their own (a denominator change).
Figures of both sides are recomputed from their rows with `audit.summary.figures`;
a figure is reported when its value, its counts or any verdict inside it changed.

Each row whose verdict changed gets one cause, the first that applies in this order
(all that apply are kept in `causes`):

1. `response`  — the graded text differs: both rows carry `response_sha256` and the
   hashes differ. Rows without hashes (imported verdicts) fall back to an inference:
   the responses packages differ in digest, the attempt is the same, and the same
   extractor (equal fingerprint: registered versions are immutable and deterministic)
   read a different answer — or the row is `missing` on one side.
2. `policy`    — which text counts, or whether it counts: the graded attempt differs
   (re-sampling), or either side's status is `truncated`, `excluded` or `missing`.
   These are decided before any answer is read, so they come before the answer.
3. `reference` — the gold answer differs (both rows carry one).
4. `extractor` — the extracted answer differs.
5. `policy`    — same answer, and either status is `no_answer` or `random_guess`:
   how an unreadable response counts (wrong vs seeded guess).
6. `grader`    — same text, answer, reference and attempt: the grader judged differently.

Loading uses the Arrow paths of `audit.verdicts.read_verdict_table`; the join and
the comparisons run in pyarrow/numpy, so a million rows take seconds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from audit import stats
from audit.errors import AuditError
from audit.jsonl import dumps
from audit.models import Producer, Record
from audit.schemas import register
from audit.summary import figures as compute_figures
from audit.verdicts import (
    ComponentRef,
    Figure,
    PackageRef,
    Policies,
    VerdictFile,
    read_verdict_table,
)

DIFF_REPORT_SCHEMA_VERSION = 1

CAUSES = ("response", "policy", "reference", "extractor", "grader")
"""Every cause, in the order used to list them (precedence is in the module docstring)."""

SELECTION_STATUSES = ("truncated", "excluded", "missing")
"""Statuses decided by a policy before any answer is read (cut at the ceiling, excluded, no response)."""

NO_ANSWER_STATUSES = ("no_answer", "random_guess")
"""Statuses of rows without a readable answer, whose verdict the no-answer policy decides."""

Verdict = Literal["correct", "incorrect", "ungraded"]
Cause = Literal["response", "policy", "reference", "extractor", "grader"]


# --------------------------------------------------------------------------- report model


class SideInfo(Record):
    """One of the two verdict files compared."""

    path: str
    """The file as given on the command line."""
    rows_source: Literal["parquet", "json-stream", "json"]
    """Where its rows were read from: the Parquet sidecar, the one-row-per-line JSON, or a full JSON load."""
    rows: int
    """Number of rows."""
    benchmark: str
    """Benchmark spec named in the file."""
    responses_package: PackageRef | None
    """The graded responses (null for imported verdicts)."""
    items_package: PackageRef | None
    """The items package, when named."""
    extractor: ComponentRef | None
    """Extractor `name@version` and fingerprint (null when answers were imported)."""
    grader: ComponentRef | None
    """Grader `name@version` and fingerprint (null when verdicts were imported)."""
    policies: Policies
    """Policies the grading applied."""
    producer: Producer
    """The program that wrote the file."""


class RowState(Record):
    """One side of a changed row."""

    attempt: int | None
    """Attempt graded (0 = original); null when no response exists."""
    answer: str | None
    """Extracted answer; null when none."""
    rule: str | None
    """Extractor step that fired, or why none did."""
    verdict: Verdict
    """`correct`, `incorrect` or `ungraded`."""
    status: str
    """Why the row got its verdict (`correct`, `no_answer`, `truncated`, ...)."""
    reason: str
    """The verdict file's one-line explanation."""
    reference: str | None = None
    """Gold answer, given only when the two sides' references differ (verdict files are private)."""


class ChangedRow(Record):
    """A row present in both files whose verdict differs."""

    item_id: str
    """The item's id."""
    sample: int
    """Run index."""
    cause: Cause
    """The first cause that applies, in the documented precedence."""
    causes: list[Cause]
    """Every cause that applies, in precedence order (`cause` is the first)."""
    old: RowState
    """The row in OLD."""
    new: RowState
    """The row in NEW."""


class OneSidedRow(Record):
    """A row present in one file only: it entered or left the denominator."""

    item_id: str
    """The item's id."""
    sample: int
    """Run index."""
    verdict: Verdict
    """Its verdict in the file that has it."""
    status: str
    """Its status in the file that has it."""


class CauseCount(Record):
    """How many changed rows one cause explains, by verdict transition."""

    cause: Cause
    """The cause."""
    rows: int
    """Changed rows with this cause as their first cause."""
    transitions: dict[str, int]
    """Rows per transition, keyed `old->new` (e.g. `incorrect->correct`)."""


class FigureChange(Record):
    """One figure that changed: old and new value, the paired flips, and McNemar's exact p."""

    name: str
    """Figure id, e.g. `accuracy`, `accuracy_all[sample=0]` (see `audit.summary.figure_name`)."""
    sample: int | None
    """Run index, or null for the overall figure."""
    denominator: Literal["graded", "all"]
    """`graded` leaves ungraded rows out; `all` counts them wrong."""
    old: Figure | None
    """The figure recomputed from OLD's rows (null when OLD has no rows in its scope)."""
    new: Figure | None
    """The figure recomputed from NEW's rows."""
    old_recorded: float | None
    """The value OLD's own summary records (differs from `old.value` when that summary does not match its rows)."""
    new_recorded: float | None
    """The value NEW's own summary records."""
    delta_points: float | None
    """(new − old) × 100, in percentage points; null when one side is missing."""
    changed: int
    """Aligned rows whose verdict change moves this figure (for `graded` also moves in or out of the denominator)."""
    to_correct: int
    """Paired rows not correct in OLD, correct in NEW (for `graded`: graded on both sides)."""
    to_incorrect: int
    """Paired rows correct in OLD, not correct in NEW (for `graded`: graded on both sides)."""
    entered: int
    """Aligned rows ungraded in OLD, graded in NEW (always 0 for `all`)."""
    left: int
    """Aligned rows graded in OLD, ungraded in NEW (always 0 for `all`)."""
    pairs: int
    """Aligned rows the paired test runs over (for `graded`: graded on both sides)."""
    mcnemar_p: float
    """Two-sided exact McNemar p of `to_correct` vs `to_incorrect` (1.0 when both are 0)."""
    only_old: int
    """Rows in this figure's scope present in OLD only."""
    only_new: int
    """Rows in this figure's scope present in NEW only."""
    causes: dict[str, int]
    """The `changed` rows by cause."""


class DiffReport(Record):
    """`audit diff --format json`: every changed figure and every changed row between two verdict files."""

    schema_version: int = DIFF_REPORT_SCHEMA_VERSION
    """Version of this format."""
    kind: Literal["diff_report"] = "diff_report"
    """Always `diff_report`."""
    old: SideInfo
    """The recorded grading."""
    new: SideInfo
    """The recomputed grading."""
    different_responses: bool
    """True when the responses packages differ in digest (only with `--allow-different-responses`)."""
    notes: list[str] = Field(default_factory=list)
    """File-level findings: components and policies that differ, summaries that disagree with their rows."""
    aligned: int
    """Rows present in both files (compared)."""
    unchanged: int
    """Aligned rows with the same verdict."""
    other_changes: int
    """Aligned rows with the same verdict whose answer, status, attempt or reference differs."""
    causes: list[CauseCount]
    """Changed rows per cause, in cause order; causes with no rows left out."""
    figures: list[FigureChange]
    """Every figure that changed."""
    changed: list[ChangedRow]
    """Every aligned row whose verdict differs, sorted by item_id then sample."""
    only_old: list[OneSidedRow]
    """Rows present in OLD only, sorted by item_id then sample."""
    only_new: list[OneSidedRow]
    """Rows present in NEW only, sorted by item_id then sample."""

    @property
    def has_changes(self) -> bool:
        """True when any figure, verdict or row set differs (exit 1 of `audit diff`)."""
        return bool(self.figures or self.changed or self.only_old or self.only_new)


register("diff_report.v1", DiffReport)


# --------------------------------------------------------------------------- loading


@dataclass
class _Side:
    path: str
    header: VerdictFile
    table: Any
    source: str

    def info(self) -> SideInfo:
        h = self.header
        return SideInfo(path=self.path, rows_source=self.source, rows=self.table.num_rows, benchmark=h.benchmark,
                        responses_package=h.responses_package, items_package=h.items_package,
                        extractor=h.extractor, grader=h.grader, policies=h.policies, producer=h.producer)


def _load(path: str | Path) -> _Side:
    header, table, source = read_verdict_table(path)
    return _Side(str(path), header, table, source)


def _ref(c: ComponentRef | None) -> str:
    return f"{c.name}@{c.version}" if c else "none (imported)"


def responses_differ(old: VerdictFile, new: VerdictFile) -> bool:
    """True when both files name their responses package and the digests differ."""
    a, b = old.responses_package, new.responses_package
    return a is not None and b is not None and a.digest != b.digest


def diff_files(old: str | Path, new: str | Path, *, allow_different_responses: bool = False) -> DiffResult:
    """Compare two verdict files; refuse different responses packages unless allowed."""
    o = _load(old)
    n = _load(new)
    if responses_differ(o.header, n.header) and not allow_different_responses:
        a, b = o.header.responses_package, n.header.responses_package
        assert a is not None and b is not None
        raise AuditError(f"the files grade different responses packages ({_package_label(a)} vs "
                         f"{_package_label(b)}); pass --allow-different-responses to compare anyway",
                         path=str(new), field="responses_package")
    return _diff(o, n)


# --------------------------------------------------------------------------- comparison


def _differs(a: Any, b: Any) -> Any:
    """Null-safe inequality of two Arrow arrays: null equals null, null differs from a value."""
    import pyarrow.compute as pc

    ne = pc.fill_null(pc.not_equal(a, b), False)
    return pc.or_(ne, pc.xor(pc.is_null(a), pc.is_null(b)))


def _np(arr: Any) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False))


@dataclass
class DiffResult:
    """The comparison, with the changed rows kept as Arrow tables (a million-row diff stays fast).

    `to_report()` builds the validated `DiffReport`; `render_json` writes the same
    document directly from the tables.
    """

    old: SideInfo
    new: SideInfo
    different_responses: bool
    notes: list[str]
    aligned: int
    unchanged: int
    other_changes: int
    causes: list[CauseCount]
    figures: list[FigureChange]
    changed: Any
    """Changed rows sorted by item_id, sample: keys, `cause`, `causes`, and each side's fields (`_o`, `_n`)."""
    only_old: Any
    only_new: Any

    @property
    def has_changes(self) -> bool:
        """True when any figure, verdict or row set differs (exit 1 of `audit diff`)."""
        return bool(self.figures or self.changed.num_rows or self.only_old.num_rows or self.only_new.num_rows)

    def changed_rows(self, cause: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Changed rows as `ChangedRow` JSON objects, optionally of one cause, at most `limit`."""
        import pyarrow.compute as pc

        t = self.changed
        if cause is not None:
            t = t.filter(pc.equal(t.column("cause"), cause))
        if limit is not None:
            t = t.slice(0, limit)
        fields = ("attempt", "answer", "rule", "verdict", "status", "reason", "reference")
        col = {name: t.column(name).to_pylist() for name in t.column_names}
        out = []
        for i, ref in enumerate(col["reference_differs"]):
            sides = []
            for x in ("_o", "_n"):
                side = {f: col[f + x][i] for f in fields}
                if not ref:
                    side["reference"] = None
                sides.append(side)
            out.append({"item_id": col["item_id"][i], "sample": col["sample"][i], "cause": col["cause"][i],
                        "causes": col["causes"][i], "old": sides[0], "new": sides[1]})
        return out

    def one_sided_rows(self, which: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Rows of OLD only (`which="old"`) or NEW only, as `OneSidedRow` JSON objects."""
        t = self.only_old if which == "old" else self.only_new
        if limit is not None:
            t = t.slice(0, limit)
        return t.to_pylist()

    def header(self) -> dict[str, Any]:
        """Every report field but the row lists, as JSON values in schema order."""
        return {"schema_version": DIFF_REPORT_SCHEMA_VERSION, "kind": "diff_report",
                "old": self.old.model_dump(mode="json"), "new": self.new.model_dump(mode="json"),
                "different_responses": self.different_responses, "notes": list(self.notes),
                "aligned": self.aligned, "unchanged": self.unchanged, "other_changes": self.other_changes,
                "causes": [c.model_dump(mode="json") for c in self.causes],
                "figures": [f.model_dump(mode="json") for f in self.figures]}

    def to_report(self) -> DiffReport:
        """The validated pydantic report (builds one model per row: for small diffs and tests)."""
        return DiffReport.model_validate({**self.header(), "changed": self.changed_rows(),
                                          "only_old": self.one_sided_rows("old"),
                                          "only_new": self.one_sided_rows("new")})


def _diff(o: _Side, n: _Side) -> DiffResult:
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = ["attempt", "answer", "rule", "verdict", "status", "reason", "reference", "response_sha256"]
    if _same_keys(o.table, n.table):
        # Same rows in the same order (the usual case: one responses package graded twice): nothing to align.
        idx_o = idx_n = None
        only_o = only_n = _one_sided(o.table.slice(0, 0))
    else:
        idx_o, idx_n, rest_o, rest_n = _align(o.table, n.table)
        only_o, only_n = _one_sided(o.table.take(rest_o)), _one_sided(n.table.take(rest_n))
    a = o.table if idx_o is None else o.table.take(idx_o)
    b = n.table if idx_n is None else n.table.take(idx_n)
    both = pa.Table.from_arrays(
        [a.column("item_id"), a.column("sample")] + [a.column(c) for c in cols] + [b.column(c) for c in cols],
        names=["item_id", "sample"] + [c + "_o" for c in cols] + [c + "_n" for c in cols])
    del a, b

    vo, vn = both.column("verdict_o"), both.column("verdict_n")
    verdict_changed = pc.not_equal(vo, vn)
    some_field = pc.or_(pc.or_(_differs(both.column("answer_o"), both.column("answer_n")),
                               _differs(both.column("status_o"), both.column("status_n"))),
                        pc.or_(_both_differ(both.column("attempt_o"), both.column("attempt_n")),
                               _both_differ(both.column("reference_o"), both.column("reference_n"))))
    other_changes = int(pc.sum(pc.and_(pc.invert(verdict_changed), some_field)).as_py() or 0)

    changed = both.filter(verdict_changed)
    changed = changed.take(pc.sort_indices(changed, sort_keys=[("item_id", "ascending"), ("sample", "ascending")]))
    packages_differ = responses_differ(o.header, n.header)
    same_extractor = (o.header.extractor is not None and n.header.extractor is not None
                      and o.header.extractor.fingerprint == n.header.extractor.fingerprint)
    primary, flags = _causes(changed, packages_differ, same_extractor)

    notes = _notes(o, n, both, packages_differ, same_extractor)
    figs = _figures(o, n, both, only_o, only_n, changed, primary)
    for f in figs:
        for label, fig, rec in (("OLD", f.old, f.old_recorded), ("NEW", f.new, f.new_recorded)):
            if fig is not None and rec is not None and not math.isclose(fig.value, rec, abs_tol=1e-12):
                notes.append(f"{label}'s summary records {f.name} = {_pct(rec)} but its rows give {_pct(fig.value)}")

    cause_names = np.array(CAUSES, dtype=object)[primary] if len(primary) else np.array([], dtype=object)
    causes_lists = _cause_lists(primary, flags)
    changed = (changed.append_column("cause", pa.array(cause_names, pa.string()))
               .append_column("causes", pa.array(causes_lists, pa.list_(pa.string())))
               .append_column("reference_differs", pa.array(flags["reference"], pa.bool_())))

    vo_ch = _np(changed.column("verdict_o"))
    vn_ch = _np(changed.column("verdict_n"))
    cause_counts = []
    for ci, cause in enumerate(CAUSES):
        mask = primary == ci
        if not mask.any():
            continue
        keys, counts = np.unique(np.char.add(np.char.add(vo_ch[mask].astype(str), "->"), vn_ch[mask].astype(str)),
                                 return_counts=True)
        cause_counts.append(CauseCount(cause=cause, rows=int(mask.sum()),
                                       transitions={str(k): int(v) for k, v in zip(keys, counts)}))

    return DiffResult(
        old=o.info(), new=n.info(), different_responses=packages_differ, notes=notes, aligned=both.num_rows,
        unchanged=both.num_rows - changed.num_rows, other_changes=other_changes, causes=cause_counts,
        figures=figs, changed=changed, only_old=only_o, only_new=only_n)


def _same_keys(a: Any, b: Any) -> bool:
    if a.num_rows != b.num_rows:
        return False
    return bool(a.column("item_id").equals(b.column("item_id")) and a.column("sample").equals(b.column("sample")))


def _align(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row indices of matching (item_id, sample) pairs in `a` and `b`, and of the rows found on one side only.

    Item ids become integer codes (one hash lookup per row in Arrow), (code, sample)
    one int64 key, and matching is a sort plus a binary search in numpy.
    """
    import pyarrow.compute as pc

    ids = pc.unique(a.column("item_id"))
    code_a = _np(pc.index_in(a.column("item_id"), value_set=ids)).astype(np.int64)
    code_b_arr = pc.index_in(b.column("item_id"), value_set=ids)
    known_b = _np(pc.is_valid(code_b_arr)).astype(bool)
    code_b = _np(pc.fill_null(code_b_arr, -1)).astype(np.int64)
    sa = _np(a.column("sample")).astype(np.int64)
    sb = _np(b.column("sample")).astype(np.int64)
    lo = min(sa.min(initial=0), sb.min(initial=0))
    span = max(sa.max(initial=0), sb.max(initial=0)) - lo + 1
    key_a = code_a * span + (sa - lo)
    key_b = code_b * span + (sb - lo)
    order = np.argsort(key_a, kind="stable")
    sorted_a = key_a[order]
    pos = np.searchsorted(sorted_a, key_b)
    pos_c = np.minimum(pos, max(len(sorted_a) - 1, 0))
    match = known_b & (len(sorted_a) > 0) & (sorted_a[pos_c] == key_b) if len(sorted_a) else np.zeros(len(key_b), bool)
    idx_b = np.flatnonzero(match)
    idx_a = order[pos_c[match]]
    seen_a = np.zeros(len(key_a), dtype=bool)
    seen_a[idx_a] = True
    return idx_a, idx_b, np.flatnonzero(~seen_a), np.flatnonzero(~match)


def _cause_lists(primary: np.ndarray, flags: dict[str, np.ndarray]) -> list[list[str]]:
    """Every applicable cause per row, the primary first, the rest in CAUSES order."""
    if not len(primary):
        return []
    bits = np.zeros(len(primary), dtype=np.int64)
    for i, c in enumerate(CAUSES):
        bits |= flags[c].astype(np.int64) << i
    bits |= np.int64(1) << primary.astype(np.int64)
    combos: dict[tuple[int, int], list[str]] = {}
    out = []
    for p, b in zip(primary.tolist(), bits.tolist()):
        key = (p, b)
        lst = combos.get(key)
        if lst is None:
            lst = [CAUSES[p]] + [c for i, c in enumerate(CAUSES) if b >> i & 1 and i != p]
            combos[key] = lst
        out.append(lst)
    return out


def _both_differ(a: Any, b: Any) -> Any:
    """Both non-null and different (a reference missing on one side is unknown, not a change)."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.not_equal(a, b), False)


def _causes(changed: Any, packages_differ: bool, same_extractor: bool) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Primary cause index per changed row, and each cause's flag array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    c = changed.column
    answer_diff = _np(_differs(c("answer_o"), c("answer_n"))).astype(bool)
    # An attempt unknown on one side (imported verdicts) is not a change of attempt.
    attempt_diff = _np(_both_differ(c("attempt_o"), c("attempt_n"))).astype(bool)
    ref_diff = _np(_both_differ(c("reference_o"), c("reference_n"))).astype(bool)
    sel = pa.array(list(SELECTION_STATUSES), pa.string())
    noans = pa.array(list(NO_ANSWER_STATUSES), pa.string())

    def either(value_set: Any) -> np.ndarray:
        return _np(pc.or_(pc.is_in(c("status_o"), value_set=value_set),
                          pc.is_in(c("status_n"), value_set=value_set))).astype(bool)

    selection = either(sel) | attempt_diff
    no_answer = either(noans) & ~answer_diff
    missing = either(pa.array(["missing"], pa.string()))
    text_known = _np(pc.and_(pc.is_valid(c("response_sha256_o")), pc.is_valid(c("response_sha256_n")))).astype(bool)
    text_diff = _np(_both_differ(c("response_sha256_o"), c("response_sha256_n"))).astype(bool)
    if packages_differ:
        inferred = (same_extractor & answer_diff & ~attempt_diff) | missing
        response = np.where(text_known, text_diff & ~attempt_diff, inferred)
    else:
        response = np.zeros(len(answer_diff), dtype=bool)
    flags = {
        "response": response,
        "policy": selection | no_answer,
        "reference": ref_diff,
        "extractor": answer_diff,
    }
    # Precedence: response, policy (selection), reference, extractor, policy (no answer), grader.
    order = [(response, "response"), (selection, "policy"), (ref_diff, "reference"), (answer_diff, "extractor"),
             (no_answer, "policy")]
    primary = np.full(len(answer_diff), CAUSES.index("grader"), dtype=np.int8)
    decided = np.zeros(len(answer_diff), dtype=bool)
    for mask, cause in order:
        take = mask & ~decided
        primary[take] = CAUSES.index(cause)
        decided |= mask
    flags["grader"] = ~(response | selection | no_answer | ref_diff | answer_diff)
    return primary, flags


def _one_sided(table: Any) -> Any:
    import pyarrow.compute as pc

    t = table.select(["item_id", "sample", "verdict", "status"])
    return t.take(pc.sort_indices(t, sort_keys=[("item_id", "ascending"), ("sample", "ascending")]))


def _notes(o: _Side, n: _Side, both: Any, packages_differ: bool, same_extractor: bool) -> list[str]:
    notes = []
    a, b = o.header.responses_package, n.header.responses_package
    if packages_differ:
        assert a is not None and b is not None
        notes.append(f"DIFFERENT responses packages (compared with --allow-different-responses): OLD "
                     f"{_package_label(a)}, NEW {_package_label(b)}"
                     + ("" if same_extractor else "; rows attributed to extractor, grader or policy may also "
                        "reflect changed response text"))
    elif a is None or b is None:
        which = " and ".join(x for x, p in (("OLD", a), ("NEW", b)) if p is None)
        notes.append(f"responses package not named in {which}: cannot check that both grade the same responses")
    ia, ib = o.header.items_package, n.header.items_package
    if ia is not None and ib is not None and ia.digest != ib.digest:
        notes.append(f"items packages differ: OLD {_package_label(ia)}, NEW {_package_label(ib)}")
    for label, x, y in (("extractor", o.header.extractor, n.header.extractor),
                        ("grader", o.header.grader, n.header.grader),
                        ("multiple-choice extractor", o.header.mc_extractor, n.header.mc_extractor),
                        ("multiple-choice grader", o.header.mc_grader, n.header.mc_grader)):
        if x != y:
            notes.append(f"{label}: {_ref(x)} -> {_ref(y)}")
    if o.header.reference_field != n.header.reference_field:
        notes.append(f"reference field: {o.header.reference_field} -> {n.header.reference_field}")
    pa_, pb = o.header.policies.model_dump(), n.header.policies.model_dump()
    for k in pa_:
        if pa_[k] != pb[k]:
            notes.append(f"policy {k}: {_show(pa_[k])} -> {_show(pb[k])}")
    if o.header.benchmark != n.header.benchmark:
        notes.append(f"benchmark: {o.header.benchmark} -> {n.header.benchmark}")
    if not packages_differ and same_extractor and a is not None:
        c = both.column
        odd = int(np.sum(_np(_differs(c("answer_o"), c("answer_n"))).astype(bool)
                         & ~_np(_both_differ(c("attempt_o"), c("attempt_n"))).astype(bool)))
        if odd:
            notes.append(f"{odd} rows read a different answer from the same responses with the same extractor "
                         f"fingerprint: the extractor is not deterministic, or the files were edited")
    return notes


def _show(v: Any) -> str:
    return dumps(v) if not isinstance(v, str) else v


# --------------------------------------------------------------------------- figures


def _figures(o: _Side, n: _Side, both: Any, only_o: Any, only_n: Any, changed: Any,
             primary: np.ndarray) -> list[FigureChange]:
    old_figs = {f.name: f for f in compute_figures(_frame(o.table))}
    new_figs = {f.name: f for f in compute_figures(_frame(n.table))}
    old_rec = {f.name: f.value for f in o.header.summary.figures}
    new_rec = {f.name: f.value for f in n.header.summary.figures}
    names = list(new_figs) + [k for k in old_figs if k not in new_figs]

    # Paired counts per sample over the aligned rows.
    samples = _np(both.column("sample")).astype(np.int64)
    vo = _np(both.column("verdict_o"))
    vn = _np(both.column("verdict_n"))
    oc, nc = vo == "correct", vn == "correct"
    og, ng = vo != "ungraded", vn != "ungraded"
    uniq, inv = np.unique(samples, return_inverse=True) if len(samples) else (np.array([], np.int64),
                                                                              np.array([], np.int64))

    def per_sample(mask: np.ndarray) -> dict[int, int]:
        counts = np.bincount(inv, weights=mask.astype(np.int64), minlength=len(uniq)) if len(uniq) else []
        return {int(s): int(c) for s, c in zip(uniq, counts)}

    counts = {
        "graded": {"pairs": per_sample(og & ng), "to_correct": per_sample(og & ng & ~oc & nc),
                   "to_incorrect": per_sample(og & ng & oc & ~nc), "entered": per_sample(~og & ng),
                   "left": per_sample(og & ~ng)},
        "all": {"pairs": per_sample(np.ones(len(samples), bool)), "to_correct": per_sample(~oc & nc),
                "to_incorrect": per_sample(oc & ~nc), "entered": {}, "left": {}},
    }
    one_o = _np(only_o.column("sample")).astype(np.int64)
    one_n = _np(only_n.column("sample")).astype(np.int64)
    ch_s = _np(changed.column("sample")).astype(np.int64)
    ch_correctness = _np(changed.column("verdict_o")) == "correct"
    ch_correctness = ch_correctness != (_np(changed.column("verdict_n")) == "correct")

    out = []
    for name in names:
        f_old, f_new = old_figs.get(name), new_figs.get(name)
        ref = f_new or f_old
        assert ref is not None
        denom, s = ref.denominator, ref.sample
        cnt = counts[denom]

        def total(key: str) -> int:
            d = cnt[key]
            return sum(d.values()) if s is None else d.get(s, 0)

        to_c, to_i = total("to_correct"), total("to_incorrect")
        entered, left_ = total("entered"), total("left")
        scope = np.ones(len(ch_s), bool) if s is None else ch_s == s
        if denom == "all":
            scope &= ch_correctness
        by_cause = np.bincount(primary[scope], minlength=len(CAUSES)) if len(primary) else np.zeros(len(CAUSES))
        causes = {CAUSES[i]: int(k) for i, k in enumerate(by_cause) if k}
        n_changed = int(scope.sum())
        only_old = int(len(one_o) if s is None else np.sum(one_o == s))
        only_new = int(len(one_n) if s is None else np.sum(one_n == s))
        rec_o, rec_n = old_rec.get(name), new_rec.get(name)
        moved = (f_old is None or f_new is None or f_old.value != f_new.value or f_old.correct != f_new.correct
                 or f_old.total != f_new.total)
        recorded_off = any(f is not None and r is not None and not math.isclose(f.value, r, abs_tol=1e-12)
                           for f, r in ((f_old, rec_o), (f_new, rec_n)))
        if not (moved or n_changed or only_old or only_new or recorded_off):
            continue
        delta = None if f_old is None or f_new is None else (f_new.value - f_old.value) * 100
        out.append(FigureChange(
            name=name, sample=s, denominator=denom, old=f_old, new=f_new, old_recorded=rec_o, new_recorded=rec_n,
            delta_points=delta, changed=n_changed, to_correct=to_c, to_incorrect=to_i, entered=entered,
            left=left_, pairs=total("pairs"), mcnemar_p=stats.mcnemar_exact(to_c, to_i), only_old=only_old,
            only_new=only_new, causes=causes))
    return out


def _frame(table: Any) -> Any:
    return table.select(["item_id", "sample", "verdict"]).to_pandas()


# --------------------------------------------------------------------------- output


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 100:.2f}%"


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _cell(v: Any, width: int = 40) -> str:
    if v is None:
        return "—"
    s = " ".join(str(v).split())
    if len(s) > width:
        s = s[: width - 1] + "…"
    return s.replace("|", "\\|") or "\"\""


def _scope(f: FigureChange, folded: bool = False) -> str:
    run = "all runs" if f.sample is None else f"run {f.sample}"
    if folded:
        return f"{run}, both denominators: nothing ungraded"
    den = "graded denominator" if f.denominator == "graded" else "all rows, ungraded counted wrong"
    return f"{run}, {den}"


def _counts_phrase(causes: dict[str, int]) -> str:
    return ", ".join(f"{causes[c]:,} {c}" for c in CAUSES if causes.get(c))


def _figure_paragraph(f: FigureChange, twin: FigureChange | None = None) -> str:
    """One retraction paragraph; `twin` is the other denominator's figure when it says the same."""
    if f.old is not None:
        recorded = f"recorded {_pct(f.old.value)} ({f.old.correct:,}/{f.old.total:,})"
        if f.old_recorded is not None and not math.isclose(f.old_recorded, f.old.value, abs_tol=1e-12):
            recorded = (f"recorded {_pct(f.old_recorded)} (OLD's summary; its rows give {_pct(f.old.value)}, "
                        f"{f.old.correct:,}/{f.old.total:,})")
    else:
        recorded = "not recorded (no rows in OLD)"
    recomputed = (f"recomputed {_pct(f.new.value)} ({f.new.correct:,}/{f.new.total:,})" if f.new is not None
                  else "not recomputed (no rows in NEW)")
    name = f"**{f.name}**" if twin is None else f"**{f.name}** = **{twin.name}**"
    parts = [f"{name} ({_scope(f, twin is not None)}): {recorded}, {recomputed}"
             + (f", Δ {f.delta_points:+.2f} points." if f.delta_points is not None else ".")]
    if f.changed:
        what = _counts_phrase(f.causes)
        parts.append(f"{f.changed:,} verdict{'s' if f.changed != 1 else ''} changed: {what}.")
    else:
        parts.append("No verdict changed.")
    flips = f"{f.to_correct:,} to correct, {f.to_incorrect:,} to incorrect"
    parts.append(f"Paired over {f.pairs:,} rows: {flips}; McNemar exact p = {_p(f.mcnemar_p)}.")
    if f.entered or f.left:
        parts.append(f"{_n(f.entered, 'row')} entered and {f.left:,} left the denominator.")
    if f.only_old or f.only_new:
        parts.append(f"{_n(f.only_old, 'row')} only in OLD, {f.only_new:,} only in NEW.")
    return " ".join(parts)


def _package_label(p: PackageRef) -> str:
    """Package id and digest prefix; the digest once when the id already ends with it (derived ids)."""
    short = p.digest[:12]
    return p.package_id if p.package_id.endswith(short) else f"{p.package_id} {short}"


def _side_line(label: str, s: SideInfo) -> str:
    rp = s.responses_package
    resp = _package_label(rp) if rp else "not named"
    return (f"- {label}: `{s.path}` — {s.benchmark}, {_n(s.rows, 'row')} ({s.rows_source}); extractor "
            f"{_ref(s.extractor)}, grader {_ref(s.grader)}; responses {resp}")


def _n(k: int, word: str) -> str:
    return f"{k:,} {word}{'' if k == 1 else 's'}"


def _verdict_cell(r: dict[str, Any]) -> str:
    return r["verdict"] if r["status"] == r["verdict"] else f"{r['verdict']} ({r['status']})"


def _note_cell(r: dict[str, Any]) -> str:
    o, n = r["old"], r["new"]
    bits = []
    if o["reference"] is not None or n["reference"] is not None:
        bits.append(f"reference {_cell(o['reference'], 12)} → {_cell(n['reference'], 12)}")
    if o["attempt"] is not None and n["attempt"] is not None and o["attempt"] != n["attempt"]:
        bits.append(f"attempt {_cell(o['attempt'])} → {_cell(n['attempt'])}")
    also = r["causes"][1:]
    if also:
        bits.append("also " + ", ".join(also))
    return "; ".join(bits)


def _repeats(f: FigureChange, overall: FigureChange | None) -> bool:
    """A run's figure that says exactly what the overall one says (a single run): not printed twice."""
    if f.sample is None or overall is None:
        return False

    def counts(x: Figure | None) -> tuple[int, int] | None:
        return None if x is None else (x.correct, x.total)

    return (counts(f.old) == counts(overall.old) and counts(f.new) == counts(overall.new)
            and f.changed == overall.changed and f.only_old == overall.only_old and f.only_new == overall.only_new)


_TWIN_FIELDS = ("old", "new", "old_recorded", "new_recorded", "delta_points", "changed", "to_correct", "to_incorrect",
                "entered", "left", "pairs", "mcnemar_p", "only_old", "only_new", "causes")
"""What two figures must share to be printed as one (everything but name and denominator)."""


def _same_figure(a: FigureChange, b: FigureChange) -> bool:
    """Both denominators of one scope say exactly the same thing (no row is ungraded on either side)."""

    def counts(x: Figure | None) -> tuple[int, int, float] | None:
        return None if x is None else (x.correct, x.total, x.value)

    return all(counts(getattr(a, k)) == counts(getattr(b, k)) if k in ("old", "new") else getattr(a, k) == getattr(b, k)
               for k in _TWIN_FIELDS)


def _paragraph_plan(figures: list[FigureChange]) -> list[tuple[FigureChange, FigureChange | None]]:
    """The figures to print, each with the other-denominator twin folded into it (or None).

    Overall figures come first (the headline), then the runs; a run's figure that
    repeats the overall one (a single run) is not printed twice; an `all` figure equal
    in every number to the `graded` one of the same scope is folded into it.
    """
    overall = {f.denominator: f for f in figures if f.sample is None}
    shown = [f for f in figures if not _repeats(f, overall.get(f.denominator))]
    shown.sort(key=lambda f: (f.sample is not None, f.sample if f.sample is not None else -1,
                              f.denominator != "graded"))
    plan: list[tuple[FigureChange, FigureChange | None]] = []
    folded: set[int | None] = set()
    for f in shown:
        if f.denominator == "all" and f.sample in folded:
            continue
        twin = None
        if f.denominator == "graded":
            other = next((x for x in shown if x.denominator == "all" and x.sample == f.sample), None)
            if other is not None and _same_figure(f, other):
                twin = other
                folded.add(f.sample)
        plan.append((f, twin))
    return plan


def render_markdown(result: DiffResult, max_items: int = 20) -> str:
    """The human report: header, a retraction paragraph per changed figure, changed rows by cause.

    At most `max_items` rows are printed per cause and per one-sided list. Overall figures
    come first; a run's figure that repeats the overall one (a single run) is printed once,
    as the overall figure; the two denominator variants of one scope are printed as one
    paragraph when every number agrees (nothing ungraded). JSON keeps every figure.
    """
    r = result
    n_changed, n_old, n_new = r.changed.num_rows, r.only_old.num_rows, r.only_new.num_rows
    lines = ["# audit diff", "", _side_line("OLD", r.old), _side_line("NEW", r.new)]
    lines.append(f"- rows: {r.aligned:,} compared, {n_changed:,} verdict{'s' if n_changed != 1 else ''} changed, "
                 f"{n_old:,} only in OLD, {n_new:,} only in NEW")
    for note in r.notes:
        lines.append(f"- note: {note}")
    lines.append("")
    if not r.has_changes:
        lines.append("No figure and no verdict changed.")
        if r.other_changes:
            lines += ["", f"{_n(r.other_changes, 'row')} kept the verdict with a different answer, status, attempt "
                          f"or reference (see --format json)."]
        return "\n".join(lines) + "\n"
    lines += ["## Retractions", ""]
    plan = _paragraph_plan(r.figures)
    for f, twin in plan:
        lines += [_figure_paragraph(f, twin), ""]
    if not plan:
        lines += ["No figure changed.", ""]
    if n_changed:
        lines += ["## Changed verdicts by cause", "", "| cause | rows | transitions |", "| --- | ---: | --- |"]
        for cc in r.causes:
            trans = ", ".join(f"{k.replace('->', ' → ')} {v:,}" for k, v in cc.transitions.items())
            lines.append(f"| {cc.cause} | {cc.rows:,} | {trans} |")
        lines.append("")
        for cc in r.causes:
            lines += [f"### {cc.cause} ({cc.rows:,})", "",
                      "| item_id | sample | old answer | new answer | old rule | new rule | old verdict | "
                      "new verdict | note |",
                      "| --- | ---: | --- | --- | --- | --- | --- | --- | --- |"]
            for row in r.changed_rows(cc.cause, limit=max_items):
                o, n = row["old"], row["new"]
                lines.append(f"| {_cell(row['item_id'])} | {row['sample']} | {_cell(o['answer'])} | "
                             f"{_cell(n['answer'])} | {_cell(o['rule'])} | {_cell(n['rule'])} | {_verdict_cell(o)} | "
                             f"{_verdict_cell(n)} | {_note_cell(row)} |")
            if cc.rows > max_items:
                lines.append(f"| … {cc.rows - max_items:,} more (all are in --format json) | | | | | | | | |")
            lines.append("")
    if n_old or n_new:
        lines += ["## Rows in one file only", "", "| file | item_id | sample | verdict |", "| --- | --- | ---: | --- |"]
        for label, which, count in (("OLD", "old", n_old), ("NEW", "new", n_new)):
            for row in r.one_sided_rows(which, limit=max_items):
                lines.append(f"| {label} | {_cell(row['item_id'])} | {row['sample']} | {_verdict_cell(row)} |")
            if count > max_items:
                lines.append(f"| {label} | … {count - max_items:,} more | | |")
        lines.append("")
    if r.other_changes:
        lines += [f"{_n(r.other_changes, 'further row')} kept the verdict with a different answer, status, attempt "
                  f"or reference (see --format json).", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""Same output as `audit.jsonl.dumps`."""


def render_json(result: DiffResult) -> str:
    """The `diff_report.v1` document: header keys indented, one row per line in the row lists; stable bytes."""
    head = json.dumps(result.header(), ensure_ascii=False, indent=2, allow_nan=False)
    encode = _ROW_ENCODER.encode  # one encoder for all rows (json.dumps builds one per call)
    parts = []
    for key, rows in (("changed", result.changed_rows()), ("only_old", result.one_sided_rows("old")),
                      ("only_new", result.one_sided_rows("new"))):
        body = "[\n" + ",\n".join("    " + encode(row) for row in rows) + "\n  ]" if rows else "[]"
        parts.append(f'  "{key}": {body}')
    return head[:-2] + ",\n" + ",\n".join(parts) + "\n}\n"

"""The `audit diff` report: its pydantic document (`diff_report.v1`) and the in-memory result.

`DiffResult` keeps the changed rows as Arrow tables (a million-row diff stays fast);
`DiffResult.to_report()` builds the validated `DiffReport` document.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from audit.models import Producer, Record, Verdict
from audit.schemas import register
from audit.verdicts.models import ComponentRef, Figure, PackageRef, Policies

DIFF_REPORT_SCHEMA_VERSION = 1

Cause = Literal["response", "policy", "reference", "extractor", "grader", "inconsistent"]
CAUSES: tuple[Cause, ...] = ("response", "policy", "reference", "extractor", "grader", "inconsistent")
"""Every cause, in the order used to list them (precedence is in the module docstring)."""
SideName = Literal["old", "new"]
"""OLD or NEW: one of the two gradings compared."""
Strength = Literal["statement", "format", "fallback", "no read", "unknown"]
"""How strong a read was (see `StrengthCount.strength`)."""

SELECTION_STATUSES = ("truncated", "excluded", "missing")
"""Statuses decided by a policy before any answer is read (cut at the ceiling, excluded, no response)."""

NO_ANSWER_STATUSES = ("no_answer", "random_guess")
"""Statuses of rows without a readable answer, whose verdict the no-answer policy decides."""


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
    bad_input: int = 0
    """Rows with status `bad_input` (recorded ungraded: a source record that disagrees with itself)."""


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


class SubjectChange(Record):
    """One subject's figures on both sides (e.g. an MMLU-Pro category), with its changed rows."""

    subject: str | None
    """The items' subject, from NEW's verdict file (else OLD's); null for items without one."""
    items: int
    """Items of this subject present in either file."""
    old: list[Figure]
    """Overall figures recomputed from OLD's rows of this subject (both denominators; empty when none)."""
    new: list[Figure]
    """Overall figures recomputed from NEW's rows of this subject."""
    changed: int
    """Aligned rows of this subject whose verdict changed."""
    to_correct: int
    """Of those, rows not correct in OLD and correct in NEW."""
    to_incorrect: int
    """Of those, rows correct in OLD and not correct in NEW."""


class RuleWords(Record):
    """What an extractor rule shown in the changed rows means."""

    extractor: str
    """The extractor `name@version` that declares the rule."""
    rule: str
    """The rule label as the rows carry it (e.g. `L3`)."""
    words: str
    """What it means, from the extractor's declared rules."""


class StrengthCount(Record):
    """Changed rows by how strong a read decided them, on one side (see `audit.extractors.STRENGTHS`)."""

    side: SideName
    """Whose read: OLD's or NEW's."""
    strength: Strength
    """The read's strength; `no read` when that side read no answer, `unknown` when its extractor is not
    registered here or declares no strength (imported answers name no rule)."""
    rows: int
    """Changed rows whose read on that side has this strength."""
    to_correct: int
    """Of those, rows not correct in OLD and correct in NEW."""
    to_incorrect: int
    """Of those, rows correct in OLD and not correct in NEW."""


class FallbackReads(Record):
    """Every verdict change rests on fallback reads: how often such reads hit, against chance.

    The fallback reads are the aligned rows one side read with a fallback rule and the other side read no
    answer at all: the rows where nothing but the fallback decides. A diff lists only those whose verdict
    changed (the lucky matches, or the unlucky misses); this counts all of them.
    """

    side: SideName
    """The side whose fallback reads decide the changes."""
    extractor: str
    """That side's extractor `name@version`."""
    rules: list[str]
    """The fallback rules that read them (e.g. `L3`)."""
    changed: int
    """Changed rows, all resting on such reads."""
    reads: int
    """Aligned rows read by a fallback rule on `side` and read as no answer on the other."""
    hits: int
    """Of those, rows correct on `side`."""
    hit_rate: float
    """hits / reads."""
    letters: int | None
    """Option letters the extractor reads (10 for A-J), when it declares them; null otherwise."""
    chance: float | None
    """1 / letters: the hit rate of a letter read at random; null when `letters` is."""
    p_value: float | None
    """One-sided exact binomial p of at least `hits` in `reads` at `chance`; null when `chance` is."""


class PossiblyCut(Record):
    """A labelled heuristic, not a verdict: changed rows whose response records no finish reason and stops
    mid-sentence (its last character ends no sentence), so it may have been cut."""

    checked: int
    """Changed rows whose response text was read (from NEW's, else OLD's, responses package)."""
    rows: int
    """Of those, responses with no finish reason that stop mid-sentence."""
    items: list[str] = Field(default_factory=list)
    """Their `item_id:sample` keys, in natural order."""
    note: str | None = None
    """Why fewer rows were checked than changed (the responses package could not be opened), if so."""


class DiffReport(Record):
    """`audit diff --format json`: every changed figure and every changed row between two verdict files."""

    schema_version: int = Field(default=DIFF_REPORT_SCHEMA_VERSION, ge=1, le=DIFF_REPORT_SCHEMA_VERSION)
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
    """Every aligned row whose verdict differs, in natural order of item_id (`q2` before `q10`), then sample."""
    only_old: list[OneSidedRow]
    """Rows present in OLD only, in natural order of item_id, then sample."""
    only_new: list[OneSidedRow]
    """Rows present in NEW only, in natural order of item_id, then sample."""
    subjects: list[SubjectChange] = Field(default_factory=list)
    """Per subject, when either file records subjects (verdict file schema version 2), in natural order."""
    rules: list[RuleWords] = Field(default_factory=list)
    """The extractor rules named in the changed rows, in words."""
    strengths: list[StrengthCount] = Field(default_factory=list)
    """Changed rows by the strength of each side's read (sides with no registered extractor left out)."""
    fallback: FallbackReads | None = None
    """Set when every changed verdict rests on fallback reads of one side: their hit rate against chance."""
    possibly_cut: PossiblyCut | None = None
    """Changed rows whose responses may have been cut (no finish reason, mid-sentence end): a heuristic."""

    @property
    def has_changes(self) -> bool:
        """True when any figure, verdict or row set differs (exit 1 of `audit diff`)."""
        return bool(self.figures or self.changed or self.only_old or self.only_new)


register("diff_report.v1", DiffReport)


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
    """Changed rows in natural order of item_id, then sample: keys, `cause`, `causes`, and each side's fields
    (`_o`, `_n`)."""
    only_old: Any
    only_new: Any
    subjects: list[SubjectChange] = dataclasses.field(default_factory=list)
    rules: list[RuleWords] = dataclasses.field(default_factory=list)
    strengths: list[StrengthCount] = dataclasses.field(default_factory=list)
    fallback: FallbackReads | None = None
    possibly_cut: PossiblyCut | None = None

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
        rows: list[dict[str, Any]] = t.to_pylist()
        return rows

    def header(self) -> dict[str, Any]:
        """Every report field but the row lists, as JSON values in schema order."""
        return {"schema_version": DIFF_REPORT_SCHEMA_VERSION, "kind": "diff_report",
                "old": self.old.model_dump(mode="json"), "new": self.new.model_dump(mode="json"),
                "different_responses": self.different_responses, "notes": list(self.notes),
                "aligned": self.aligned, "unchanged": self.unchanged, "other_changes": self.other_changes,
                "causes": [c.model_dump(mode="json") for c in self.causes],
                "figures": [f.model_dump(mode="json") for f in self.figures]}

    def tail(self) -> dict[str, Any]:
        """The report fields after the row lists, as JSON values."""
        return {"subjects": [s.model_dump(mode="json") for s in self.subjects],
                "rules": [r.model_dump(mode="json") for r in self.rules],
                "strengths": [c.model_dump(mode="json") for c in self.strengths],
                "fallback": self.fallback.model_dump(mode="json") if self.fallback else None,
                "possibly_cut": self.possibly_cut.model_dump(mode="json") if self.possibly_cut else None}

    def to_report(self) -> DiffReport:
        """The validated pydantic report (builds one model per row: for small diffs and tests)."""
        return DiffReport.model_validate({**self.header(), "changed": self.changed_rows(),
                                          "only_old": self.one_sided_rows("old"),
                                          "only_new": self.one_sided_rows("new"), **self.tail()})


def component_label(c: ComponentRef | None) -> str:
    """`name@version` of an extractor or grader, or what its absence means."""
    return f"{c.name}@{c.version}" if c else "none (imported)"


def package_label(p: PackageRef) -> str:
    """Package id and digest prefix; the digest once when the id already ends with it (derived ids)."""
    short = p.digest[:12]
    return p.package_id if p.package_id.endswith(short) else f"{p.package_id} {short}"

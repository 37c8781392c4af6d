"""`audit diff OLD NEW`: the comparison of two gradings, row by row and figure by figure.

Rows are aligned by (item_id, sample); only rows present in both files are
compared, rows in one file only are listed on their own (a denominator change).
Figures of both sides are recomputed from their rows with `audit.summary.figures`;
a figure is reported when its value, its counts or any verdict inside it changed.

Each row whose verdict changed gets one cause, the first that applies in this order
(all that apply are kept in `causes`):

1. `response`  — the graded text differs: both rows carry `response_sha256` and the
   hashes differ. Rows without hashes (imported verdicts) fall back to an inference:
   the responses packages differ in digest, the attempt is the same, and the same
   extractor (a fingerprint its lock accepts: registered versions are immutable and deterministic)
   read a different answer — or the row is `missing` on one side.
2. `policy`    — which text counts, or whether it counts: the graded attempt differs
   (re-sampling), or either side's status is `truncated`, `excluded` or `missing`.
   These are decided before any answer is read, so they come before the answer.
3. `reference` — the gold answer differs (both rows carry one).
4. `extractor` — the extracted answer differs.
5. `policy`    — same answer, and either status is `no_answer` or `random_guess`:
   how an unreadable response counts (wrong vs seeded guess).
6. `grader`    — same text, answer, reference and attempt: the grader judged differently.
7. `inconsistent` — none of the above can explain it: both files name the same extractor, grader
   (same fingerprint and environment) and policies, the inputs the row depends on are the same,
   and the verdict still differs. Registered versions are deterministic, so one of the files was
   tampered with, or a component is not deterministic: never a retraction.

A cause counts only where what it names differs between the files: `policy` needs other policies
(or another responses package), `extractor` another extractor or another text, `grader` another
grader or library environment.

Loading uses the Arrow paths of `audit.verdicts.read_verdicts`; the join and
the comparisons run in pyarrow/numpy, so a million rows take seconds.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from audit import stats
from audit.diff.report import (
    CAUSES,
    NO_ANSWER_STATUSES,
    SELECTION_STATUSES,
    CauseCount,
    DiffResult,
    FallbackReads,
    FigureChange,
    PossiblyCut,
    RuleWords,
    SideInfo,
    SideName,
    Strength,
    StrengthCount,
    SubjectChange,
    component_label,
    package_label,
)
from audit.errors import AuditError
from audit.fileio import dumps
from audit.ids import natural_key, natural_order
from audit.lock import same_version
from audit.summary import by_subject, pct, subject_order
from audit.summary import figures as compute_figures
from audit.verdicts import FRAME_COLUMNS, VerdictFile, read_verdicts, rows_arrow_schema

if TYPE_CHECKING:
    from audit.packages import Package

# --------------------------------------------------------------------------- loading

RowsSource = Literal["parquet", "json-stream", "json"]


@dataclass(frozen=True)
class VerdictRows:
    """A grading held in memory, compared as `diff_files` compares a verdict file (nothing written or read).

    `rows` holds the columns `read_verdicts` gives (`FRAME_COLUMNS`: `item_id`, `sample`, `verdict`,
    `status` and `reason` required, the others null where absent), one row per (item_id, sample): an Arrow
    table, a pandas DataFrame, or a dict of column lists (`audit.grade.Grading.columns`).
    """

    header: VerdictFile
    """The verdict file's header (its `items` are not read)."""
    rows: Any
    label: str
    """Names the grading where a file would be named by its path (the report's `path`, error messages)."""
    base_dir: str | Path | None = None
    """The folder the header's package paths are relative to (`grade_package`'s `base_dir`); None: unknown."""
    responses: Package | None = None
    """Its responses package, already open: read (not reopened) for the possibly-cut heuristic."""
    rows_source: RowsSource = "json"
    """What the report says the rows were read from: a grading's rows are its JSON rows."""

    @functools.cached_property
    def table(self) -> Any:
        """The rows as the Arrow table a verdict file's reader gives: `FRAME_COLUMNS` in their types, checked
        (required columns without nulls, known verdicts, (item_id, sample) unique)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        rows, label = self.rows, self.label
        is_table = isinstance(rows, pa.Table)
        names = set(rows.column_names if is_table else rows if isinstance(rows, dict) else rows.columns)
        required = ("item_id", "sample", "verdict", "status", "reason")
        missing = [c for c in required if c not in names]
        if missing:
            raise AuditError(f"rows lack column(s) {', '.join(missing)}", path=label)
        schema = rows_arrow_schema()
        fields = [schema.field(c) for c in FRAME_COLUMNS]
        n = rows.num_rows if is_table else len(rows["item_id"])
        table = pa.Table.from_arrays(
            [pa.nulls(n, f.type) if f.name not in names else rows.column(f.name).cast(f.type) if is_table
             else pa.array(rows[f.name], f.type, from_pandas=True) for f in fields], schema=pa.schema(fields))
        for name in required:
            if table.column(name).null_count:
                raise AuditError("missing required field", path=label, field=name)
        if table.select(["item_id", "sample"]).group_by(["item_id", "sample"]).aggregate([]).num_rows != n:
            raise AuditError("two rows have the same item_id and sample", path=label, field="items")
        known = pa.array(["correct", "incorrect", "ungraded"])
        if pc.any(pc.invert(pc.is_in(table.column("verdict"), value_set=known))).as_py():
            raise AuditError("verdict must be one of correct, incorrect, ungraded", path=label, field="verdict")
        return table


@dataclass
class _Side:
    path: str
    header: VerdictFile
    table: Any
    source: RowsSource
    base_dir: Path | None
    """Where the header's package paths start: the verdict file's folder."""
    responses: Package | None = None

    def info(self) -> SideInfo:
        import pyarrow as pa
        import pyarrow.compute as pc

        h = self.header
        status = self.table.column("status")  # the rows, not the summary they are checked against
        if pa.types.is_dictionary(status.type):
            status = status.cast(pa.string())
        return SideInfo(path=self.path, rows_source=self.source, rows=self.table.num_rows, benchmark=h.benchmark,
                        responses_package=h.responses_package, items_package=h.items_package,
                        extractor=h.extractor, grader=h.grader, policies=h.policies, producer=h.producer,
                        bad_input=int(pc.sum(pc.equal(status, "bad_input")).as_py() or 0))


def _load(side: str | Path | VerdictRows) -> _Side:
    if isinstance(side, VerdictRows):
        base = None if side.base_dir is None else Path(side.base_dir)
        return _Side(side.label, side.header, side.table, side.rows_source, base, side.responses)
    read = read_verdicts(side)
    return _Side(str(side), read.header, read.rows, cast(RowsSource, read.source), Path(side).resolve().parent)


def responses_differ(old: VerdictFile, new: VerdictFile) -> bool:
    """True when both files name their responses package and the digests differ."""
    old_ref, new_ref = old.responses_package, new.responses_package
    return old_ref is not None and new_ref is not None and old_ref.digest != new_ref.digest


def diff_files(old: str | Path | VerdictRows, new: str | Path | VerdictRows, *,
               allow_different_responses: bool = False) -> DiffResult:
    """Compare two verdict files, or gradings in memory (`VerdictRows`); refuse different responses packages
    unless allowed."""
    old_side = _load(old)
    new_side = _load(new)
    if responses_differ(old_side.header, new_side.header) and not allow_different_responses:
        old_ref, new_ref = old_side.header.responses_package, new_side.header.responses_package
        assert old_ref is not None and new_ref is not None
        raise AuditError(f"the files grade different responses packages ({package_label(old_ref)} vs "
                         f"{package_label(new_ref)}); pass --allow-different-responses to compare anyway",
                         path=new_side.path, field="responses_package")
    return _diff(old_side, new_side)


# --------------------------------------------------------------------------- comparison


def _differs(old: Any, new: Any) -> Any:
    """Null-safe inequality of two Arrow arrays: null equals null, null differs from a value."""
    import pyarrow.compute as pc

    ne = pc.fill_null(pc.not_equal(old, new), False)
    return pc.or_(ne, pc.xor(pc.is_null(old), pc.is_null(new)))


def _np(arr: Any) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def _diff(old: _Side, new: _Side) -> DiffResult:
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = ["attempt", "answer", "rule", "verdict", "status", "reason", "reference", "response_sha256"]
    if _same_keys(old.table, new.table):
        # Same rows in the same order (the usual case: one responses package graded twice): nothing to align.
        idx_o = idx_n = None
        only_o = only_n = _one_sided(old.table.slice(0, 0))
    else:
        idx_o, idx_n, rest_o, rest_n = _align(old.table, new.table)
        only_o, only_n = _one_sided(old.table.take(rest_o)), _one_sided(new.table.take(rest_n))
    old_rows = old.table if idx_o is None else old.table.take(idx_o)
    new_rows = new.table if idx_n is None else new.table.take(idx_n)
    both = pa.Table.from_arrays(
        [old_rows.column("item_id"), old_rows.column("sample")] + [old_rows.column(column) for column in cols]
        + [new_rows.column(column) for column in cols],
        names=["item_id", "sample"] + [column + "_o" for column in cols] + [column + "_n" for column in cols])
    del old_rows, new_rows

    vo, vn = both.column("verdict_o"), both.column("verdict_n")
    verdict_changed = pc.not_equal(vo, vn)
    some_field = pc.or_(pc.or_(_differs(both.column("answer_o"), both.column("answer_n")),
                               _differs(both.column("status_o"), both.column("status_n"))),
                        pc.or_(_both_differ(both.column("attempt_o"), both.column("attempt_n")),
                               _both_differ(both.column("reference_o"), both.column("reference_n"))))
    other_changes = int(pc.sum(pc.and_(pc.invert(verdict_changed), some_field)).as_py() or 0)

    changed = both.filter(verdict_changed)
    changed = _natural(changed)
    packages_differ = responses_differ(old.header, new.header)
    same_extractor = (old.header.extractor is not None and new.header.extractor is not None
                      and same_version("extractor", old.header.extractor, new.header.extractor))
    same = _same_components(old.header, new.header)
    primary, flags = _causes(changed, packages_differ, same_extractor, same)

    notes = _notes(old, new, both, packages_differ, same_extractor)
    n_inconsistent = int(np.sum(primary == CAUSES.index("inconsistent")))
    if n_inconsistent:
        notes.append(f"{n_inconsistent} row{'s' if n_inconsistent != 1 else ''} changed verdict although both files "
                     f"name the same extractor, grader, policies and inputs: tampered or non-deterministic, not a "
                     f"retraction (cause `inconsistent`)")
    figs = _figures(old, new, both, only_o, only_n, changed, primary)
    for f in figs:
        for label, fig, rec in (("OLD", f.old, f.old_recorded), ("NEW", f.new, f.new_recorded)):
            if fig is not None and rec is not None and not math.isclose(fig.value, rec, abs_tol=1e-12):
                notes.append(f"{label}'s summary records {f.name} = {pct(rec)} but its rows give {pct(fig.value)}")

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
                                       transitions={str(k): int(v) for k, v in zip(keys, counts, strict=True)}))

    from audit.summary import error_share_note, recorded_grader_note

    for label, side in (("OLD", old), ("NEW", new)):
        errors = error_share_note(side.header.summary)
        if errors is not None:  # a figure that moved because one side graded almost nothing is no finding
            notes.append(f"{label}: {errors}")
    for (label, side), other in (((("OLD", old), new), (("NEW", new), old))):
        env, grader = side.header.environment, other.header.grader
        judge = recorded_grader_note(env.get("recorded_scorer_kind"), env.get("recorded_scorer"),
                                     component_label(grader)) if grader is not None and other.header.judge is None \
            else None
        if judge is not None:  # a judge's verdicts against a rule's: no retraction without that said
            notes.append(f"{label}: {judge}")
    subjects = _subjects(old, new, changed, notes)
    strengths, fallback = _strengths(old, new, both, changed)
    return DiffResult(
        old=old.info(), new=new.info(), different_responses=packages_differ, notes=notes, aligned=both.num_rows,
        unchanged=both.num_rows - changed.num_rows, other_changes=other_changes, causes=cause_counts,
        figures=figs, changed=changed, only_old=only_o, only_new=only_n, subjects=subjects,
        rules=_rule_words(old, new, changed), strengths=strengths, fallback=fallback,
        possibly_cut=_possibly_cut(old, new, changed) if changed.num_rows else None)


# --------------------------------------------------------------------------- read strength

STRENGTH_ORDER: tuple[Strength, ...] = ("statement", "format", "fallback", "no read", "unknown")


def _registered_extractors(header: VerdictFile) -> list[Any]:
    from audit import extractors as registry

    return [registry.get(ref.key) for ref in (header.extractor, header.mc_extractor)
            if ref is not None and ref.key in registry.REGISTRY]


def _strength_of(header: VerdictFile, rules: list[str | None], answers: list[str | None]) -> list[str] | None:
    """Each row's read strength under the file's extractors (declared beside their code); None when the
    file names no registered extractor (imported answers)."""
    exs = _registered_extractors(header)
    if not exs:
        return None
    cache: dict[str | None, str] = {}
    out = []
    for rule, answer in zip(rules, answers, strict=True):
        if answer is None:
            out.append("no read")
            continue
        got = cache.get(rule)
        if got is None:
            got = cache[rule] = next((x for x in (e.strength(rule) for e in exs) if x), "unknown")
        out.append(got)
    return out


def _strengths(old: _Side, new: _Side, both: Any, changed: Any) -> tuple[list[StrengthCount], FallbackReads | None]:
    """Changed rows by read strength per side, and, when every change rests on one side's fallback reads
    (that side read by a fallback rule where the other read no answer), those reads' hit rate against chance."""
    col = changed.column
    vo, vn = col("verdict_o").to_pylist(), col("verdict_n").to_pylist()
    up = [a != "correct" and b == "correct" for a, b in zip(vo, vn, strict=True)]
    down = [a == "correct" and b != "correct" for a, b in zip(vo, vn, strict=True)]
    per_side = {}
    counts: list[StrengthCount] = []
    sides: tuple[tuple[SideName, _Side, str], ...] = (("old", old, "_o"), ("new", new, "_n"))
    for label, side, x in sides:
        got = _strength_of(side.header, col("rule" + x).to_pylist(), col("answer" + x).to_pylist())
        if got is None:
            continue
        per_side[label] = got
        for strength in STRENGTH_ORDER:
            idx = [i for i, s in enumerate(got) if s == strength]
            if idx:
                counts.append(StrengthCount(side=label, strength=strength, rows=len(idx),
                                            to_correct=sum(up[i] for i in idx), to_incorrect=sum(down[i] for i in idx)))
    if not changed.num_rows:
        return counts, None
    for label, side, x in reversed(sides):  # NEW's reads first
        y = "_o" if x == "_n" else "_n"
        mine = per_side.get(label)
        other_answers = col("answer" + y).to_pylist()
        if mine is None or not all(s == "fallback" and a is None for s, a in zip(mine, other_answers, strict=True)):
            continue
        # Every change rests on this side's fallback reads: count all such reads, not only the changed ones.
        rules_all = both.column("rule" + x).to_pylist()
        reads = _strength_of(side.header, rules_all, both.column("answer" + x).to_pylist()) or []
        other_all = both.column("answer" + y).to_pylist()
        verdicts = both.column("verdict" + x).to_pylist()
        pop = [i for i, (s, a) in enumerate(zip(reads, other_all, strict=False)) if s == "fallback" and a is None]
        hits = sum(verdicts[i] == "correct" for i in pop)
        exs = _registered_extractors(side.header)
        letters = next((len(e.letters) for e in exs if e.letters), None)
        chance = 1 / letters if letters else None
        p = None
        if chance is not None and pop:
            from scipy import stats as _st

            p = float(_st.binomtest(hits, len(pop), chance, alternative="greater").pvalue)
        ref = side.header.extractor
        assert ref is not None
        return counts, FallbackReads(
            side=label, extractor=ref.key, rules=sorted({rules_all[i] for i in pop if rules_all[i] is not None}),
            changed=changed.num_rows, reads=len(pop), hits=hits, hit_rate=hits / len(pop) if pop else 0.0,
            letters=letters, chance=chance, p_value=p)
    return counts, None


def _possibly_cut(old: _Side, new: _Side, changed: Any) -> PossiblyCut:
    """Changed rows whose response text has no finish reason and stops mid-sentence (a heuristic), read from
    NEW's responses package (else OLD's) by the text's sha256."""
    from audit.grade import possibly_cut
    from audit.ids import natural_sorted

    keys = list(zip(changed.column("item_id").to_pylist(), changed.column("sample").to_pylist(), strict=True))
    for side, x in ((new, "_n"), (old, "_o")):
        ref = side.header.responses_package
        if ref is None or not ref.path:
            continue
        want: dict[str, list[tuple[str, int]]] = {}
        for key, sha in zip(keys, changed.column("response_sha256" + x).to_pylist(), strict=True):
            if sha is not None:
                want.setdefault(sha, []).append(key)
        if not want:
            continue
        pkg = _responses(side, ref.path)
        if pkg is None:
            continue
        ids = {k[0] for k in keys}
        cut: list[str] = []
        seen: set[str] = set()
        with contextlib.nullcontext(pkg) if pkg is side.responses else pkg:
            if pkg.manifest.package_id != ref.package_id or pkg.digest != ref.digest:
                continue
            for _, _, obj in pkg.iter_objects("response_row.v1"):
                text = obj.get("response")
                if obj.get("item_id") not in ids or not isinstance(text, str):
                    continue
                sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
                if sha in want and sha not in seen:
                    seen.add(sha)
                    if possibly_cut(text, obj.get("finish_reason")):
                        cut += [f"{i}:{s}" for i, s in want[sha]]
        checked = sum(len(want[s]) for s in seen)
        return PossiblyCut(checked=checked, rows=len(cut), items=natural_sorted(cut))
    return PossiblyCut(checked=0, rows=0, note="no responses package of either file could be opened to read the texts")


def _responses(side: _Side, recorded_path: str) -> Package | None:
    """The side's responses package: the one it holds open, else opened from where its header records it."""
    from audit.packages import open_package

    if side.responses is not None:
        return side.responses
    if side.base_dir is None:
        return None
    try:
        return open_package(side.base_dir / recorded_path)
    except Exception:  # moved or damaged: the diff itself needs no package
        return None


def _subject_map(side: _Side) -> dict[str, str | None] | None:
    subjects = getattr(side.header.summary, "subjects", None)  # a version-1 summary has none
    if not subjects:
        return None
    return {item: s.subject for s in subjects for item in s.items}


def _subjects(old: _Side, new: _Side, changed: Any, notes: list[str]) -> list[SubjectChange]:
    """Per-subject figures of both sides, with the subjects NEW records (else OLD's); none when neither does."""
    new_map, old_map = _subject_map(new), _subject_map(old)
    subject_of = new_map if new_map is not None else old_map
    if subject_of is None:
        return []
    if new_map is not None and old_map is not None:
        moved = sum(1 for item, s in old_map.items() if item in new_map and new_map[item] != s)
        if moved:
            notes.append(f"{moved} items have another subject in OLD than in NEW; subjects are NEW's")
    frames = [by_subject(_frame(side.table), subject_of) for side in (old, new)]
    ch = {"subject": [subject_of.get(i) or "" for i in changed.column("item_id").to_pylist()],
          "old": changed.column("verdict_o").to_pylist(), "new": changed.column("verdict_n").to_pylist()}
    counts: dict[str, list[int]] = {}
    for subj, vo, vn in zip(ch["subject"], ch["old"], ch["new"], strict=True):
        c = counts.setdefault(subj, [0, 0, 0])
        c[0] += 1
        c[1] += vo != "correct" and vn == "correct"
        c[2] += vo == "correct" and vn != "correct"
    out = []
    for name in subject_order(set(frames[0]) | set(frames[1])):
        parts = [f.get(name) for f in frames]
        ids = set().union(*(set(p["item_id"]) for p in parts if p is not None))
        figs = [[f for f in compute_figures(p) if f.sample is None] if p is not None else [] for p in parts]
        c = counts.get(name, [0, 0, 0])
        out.append(SubjectChange(subject=name or None, items=len(ids), old=figs[0], new=figs[1], changed=c[0],
                                 to_correct=c[1], to_incorrect=c[2]))
    return out


def _rule_words(old: _Side, new: _Side, changed: Any) -> list[RuleWords]:
    """Every rule the changed rows name, with the words its extractor declares for it."""
    from audit.views import rule_explained

    out: list[RuleWords] = []
    seen: set[tuple[str, str]] = set()
    for side, col in ((old, "rule_o"), (new, "rule_n")):
        refs = (side.header.extractor, side.header.mc_extractor)
        for rule in dict.fromkeys(changed.column(col).to_pylist()):
            found = rule_explained(rule, refs) if rule is not None else None
            if found is not None and (found[0], rule) not in seen:
                seen.add((found[0], rule))
                out.append(RuleWords(extractor=found[0], rule=rule, words=found[1]))
    return sorted(out, key=lambda w: (w.extractor, natural_key(w.rule)))


def _same_keys(old: Any, new: Any) -> bool:
    if old.num_rows != new.num_rows:
        return False
    return bool(old.column("item_id").equals(new.column("item_id"))
                and old.column("sample").equals(new.column("sample")))


def _align(old: Any, new: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row indices of matching (item_id, sample) pairs in `old` and `new`, and of the rows found on one side only.

    Item ids become integer codes (one hash lookup per row in Arrow), (code, sample)
    one int64 key, and matching is a sort plus a binary search in numpy.
    """
    import pyarrow.compute as pc

    ids = pc.unique(old.column("item_id"))
    code_a = _np(pc.index_in(old.column("item_id"), value_set=ids)).astype(np.int64)
    code_b_arr = pc.index_in(new.column("item_id"), value_set=ids)
    known_b = _np(pc.is_valid(code_b_arr)).astype(bool)
    code_b = _np(pc.fill_null(code_b_arr, -1)).astype(np.int64)
    sa = _np(old.column("sample")).astype(np.int64)
    sb = _np(new.column("sample")).astype(np.int64)
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
    for p, b in zip(primary.tolist(), bits.tolist(), strict=True):
        key = (p, b)
        lst = combos.get(key)
        if lst is None:
            lst = [CAUSES[p]] + [c for i, c in enumerate(CAUSES) if b >> i & 1 and i != p]
            combos[key] = lst
        out.append(lst)
    return out


def _both_differ(old: Any, new: Any) -> Any:
    """Both non-null and different (a reference missing on one side is unknown, not a change)."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.not_equal(old, new), False)


@dataclass(frozen=True)
class _Same:
    """What both files name alike: then it cannot explain a changed verdict (registered versions are
    immutable and deterministic, and the same policies decide alike)."""

    extractor: bool
    grader: bool
    policies: bool


def _same_components(old: VerdictFile, new: VerdictFile) -> _Same:
    def same(kind: str, old_ref: Any, new_ref: Any) -> bool:  # unknown (imported) is never "the same"
        # One version under two fingerprints its lock accepts (code moved, proven identical) is the same.
        return old_ref is not None and new_ref is not None and same_version(kind, old_ref, new_ref)

    extractor = same("extractor", old.extractor, new.extractor) and same_version("extractor", old.mc_extractor,
                                                                             new.mc_extractor)
    # Graders depend on libraries (sympy): a different environment may change a verdict.
    grader = (same("grader", old.grader, new.grader) and same_version("grader", old.mc_grader, new.mc_grader)
              and old.environment == new.environment)
    # Imported verdicts record no policy of their own (their Policies are placeholders): never "the same".
    graded = all(header.extractor is not None and header.grader is not None for header in (old, new))
    return _Same(extractor, grader,
                 graded and old.policies == new.policies and old.reference_field == new.reference_field)


def _causes(changed: Any, packages_differ: bool, same_extractor: bool,
            same: _Same) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Primary cause index per changed row, and each cause's flag array.

    A cause counts only where what it names differs: a policy cause needs other policies (or another
    responses package, whose rows may be cut or missing), an extractor cause another extractor or
    another text, a grader cause another grader or environment. A changed verdict that nothing
    explains is `inconsistent`: the same component gave two verdicts on the same input.
    """
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
    if same.policies and not packages_differ:
        selection = np.zeros(len(answer_diff), dtype=bool)
    if same.policies:
        no_answer = np.zeros(len(answer_diff), dtype=bool)
    if same.extractor:
        # The same extractor on the same text reads the same answer: only another text explains another.
        same_text = ~attempt_diff & (np.where(text_known, ~text_diff, True) if packages_differ else True)
        answer_diff = answer_diff & ~same_text
    flags = {
        "response": response,
        "policy": selection | no_answer,
        "reference": ref_diff,
        "extractor": answer_diff,
    }
    # Precedence: response, policy (selection), reference, extractor, policy (no answer), grader.
    order = [(response, "response"), (selection, "policy"), (ref_diff, "reference"), (answer_diff, "extractor"),
             (no_answer, "policy")]
    explained = response | selection | no_answer | ref_diff | answer_diff
    flags["grader"] = ~explained if not same.grader else np.zeros(len(answer_diff), dtype=bool)
    flags["inconsistent"] = ~(explained | flags["grader"])
    primary = np.full(len(answer_diff), CAUSES.index("inconsistent"), dtype=np.int8)
    primary[flags["grader"]] = CAUSES.index("grader")
    decided = np.zeros(len(answer_diff), dtype=bool)
    for mask, cause in order:
        take = mask & ~decided
        primary[take] = CAUSES.index(cause)
        decided |= mask
    return primary, flags


def _one_sided(table: Any) -> Any:
    return _natural(table.select(["item_id", "sample", "verdict", "status"]))


def _natural(table: Any) -> Any:
    """The rows in natural order of item_id (`q2` before `q10`), then by sample."""
    if table.num_rows < 2:
        return table
    return table.take(natural_order(table.column("item_id").to_pylist(), table.column("sample").to_pylist()))


def _notes(old: _Side, new: _Side, both: Any, packages_differ: bool, same_extractor: bool) -> list[str]:
    notes = []
    old_ref, new_ref = old.header.responses_package, new.header.responses_package
    if packages_differ:
        assert old_ref is not None and new_ref is not None
        notes.append(f"DIFFERENT responses packages (compared with --allow-different-responses): OLD "
                     f"{package_label(old_ref)}, NEW {package_label(new_ref)}"
                     + ("" if same_extractor else "; rows attributed to extractor, grader or policy may also "
                        "reflect changed response text"))
    elif old_ref is None or new_ref is None:
        which = " and ".join(side for side, ref in (("OLD", old_ref), ("NEW", new_ref)) if ref is None)
        notes.append(f"responses package not named in {which}: cannot check that both grade the same responses")
    old_items, new_items = old.header.items_package, new.header.items_package
    if old_items is not None and new_items is not None and old_items.digest != new_items.digest:
        notes.append(f"items packages differ: OLD {package_label(old_items)}, NEW {package_label(new_items)}")
    for label, old_component, new_component in (("extractor", old.header.extractor, new.header.extractor),
                        ("grader", old.header.grader, new.header.grader),
                        ("multiple-choice extractor", old.header.mc_extractor, new.header.mc_extractor),
                        ("multiple-choice grader", old.header.mc_grader, new.header.mc_grader)):
        if not same_version(label.rpartition(" ")[2], old_component, new_component):
            notes.append(f"{label}: {component_label(old_component)} -> {component_label(new_component)}")
    if old.header.reference_field != new.header.reference_field:
        notes.append(f"reference field: {old.header.reference_field} -> {new.header.reference_field}")
    # An imported file's policies are placeholders (it applied none; its extractor and grader notes say it is
    # imported): no policy is said to have changed from or to them.
    if all(header.extractor is not None or header.grader is not None for header in (old.header, new.header)):
        old_policies, new_policies = old.header.policies.model_dump(), new.header.policies.model_dump()
        for key in old_policies:
            if old_policies[key] != new_policies[key]:
                notes.append(f"policy {key}: {_show(old_policies[key])} -> {_show(new_policies[key])}")
    if old.header.benchmark != new.header.benchmark:
        notes.append(f"benchmark: {old.header.benchmark} -> {new.header.benchmark}")
    if not packages_differ and same_extractor and old_ref is not None:
        column = both.column
        odd = int(np.sum(_np(_differs(column("answer_o"), column("answer_n"))).astype(bool)
                         & ~_np(_both_differ(column("attempt_o"), column("attempt_n"))).astype(bool)))
        if odd:
            notes.append(f"{odd} rows read a different answer from the same responses with the same extractor "
                         f"fingerprint: the extractor is not deterministic, or the files were edited")
    return notes


def _show(value: Any) -> str:
    return dumps(value) if not isinstance(value, str) else value


# --------------------------------------------------------------------------- figures


def _figures(old: _Side, new: _Side, both: Any, only_o: Any, only_n: Any, changed: Any,
             primary: np.ndarray) -> list[FigureChange]:
    old_figs = {f.name: f for f in compute_figures(_frame(old.table))}
    new_figs = {f.name: f for f in compute_figures(_frame(new.table))}
    old_rec = {f.name: f.value for f in old.header.summary.figures}
    new_rec = {f.name: f.value for f in new.header.summary.figures}
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
        if not len(uniq):
            return {}
        tally = np.bincount(inv, weights=mask.astype(np.int64), minlength=len(uniq))
        return {int(s): int(c) for s, c in zip(uniq, tally, strict=True)}

    counts: dict[str, dict[str, dict[int, int]]] = {
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
        to_c, to_i = _in_scope(cnt["to_correct"], s), _in_scope(cnt["to_incorrect"], s)
        entered, left_ = _in_scope(cnt["entered"], s), _in_scope(cnt["left"], s)
        scope = np.ones(len(ch_s), bool) if s is None else ch_s == s
        if denom == "all":
            scope &= ch_correctness
        by_cause = np.bincount(primary[scope], minlength=len(CAUSES)) if len(primary) else np.zeros(len(CAUSES))
        causes: dict[str, int] = {CAUSES[i]: int(k) for i, k in enumerate(by_cause) if k}
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
            left=left_, pairs=_in_scope(cnt["pairs"], s), mcnemar_p=stats.mcnemar_exact(to_c, to_i), only_old=only_old,
            only_new=only_new, causes=causes))
    return out


def _in_scope(per_sample: dict[int, int], sample: int | None) -> int:
    """A count per sample, for one sample's figure or (`sample` None) for the overall one."""
    return sum(per_sample.values()) if sample is None else per_sample.get(sample, 0)


def _frame(table: Any) -> Any:
    return table.select(["item_id", "sample", "verdict"]).to_pandas()

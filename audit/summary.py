"""Figures from verdict rows: per run and overall, both denominators, with intervals.

Used by `audit grade` to write a summary and by `audit diff` to recompute the
figures of both sides the same way. Works on a pandas DataFrame with columns
`item_id`, `sample`, `verdict`, `status`, `reason`, so a million rows stay fast.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from audit.ids import natural_key, natural_sorted
from audit.verdicts.models import Figure, Interval, SubjectSummary, Summary

if TYPE_CHECKING:
    import pandas as pd

# pandas and scipy (audit.stats) are imported by the functions that compute: the formatters here (`pct`) are
# imported by every report and package view, which must not pay for them.

DENOMINATORS: tuple[Literal["graded", "all"], ...] = ("graded", "all")
"""The denominators of every accuracy figure: the graded rows, and all of them."""


def pct(value: float | None) -> str:
    """A fraction as a percentage with two decimals (`0.8125` -> `81.25%`); `n/a` for None."""
    return "n/a" if value is None else f"{value * 100:.2f}%"


def figure_name(denominator: str, sample: int | None) -> str:
    base = "accuracy" if denominator == "graded" else "accuracy_all"
    return base if sample is None else f"{base}[sample={sample}]"


def _intervals(correct: int, total: int, k_values: list[float] | None,
               question_means: pd.Series | None) -> list[Interval]:
    from audit import stats

    out = []
    if k_values is None:  # a single run
        for iv in (stats.binomial_2se(correct, total), stats.zero_failure_upper(correct, total)):
            if iv is not None:
                out.append(iv)
        return out
    for iv in (stats.runs_2se(k_values), stats.runs_t(k_values)):
        if iv is not None:
            out.append(iv)
    if question_means is not None:
        iv = stats.clustered_t(question_means.tolist())
        if iv is not None:
            out.append(iv)
    iv = stats.zero_failure_upper(correct, total)
    if iv is not None:
        out.append(iv)
    return out


def figures(df: pd.DataFrame) -> list[Figure]:
    """Every figure of a grading: each run and overall, for both denominators."""
    import pandas as pd

    if df.empty:
        return []
    is_correct = (df["verdict"] == "correct").astype("int64")
    is_graded = (df["verdict"] != "ungraded").astype("int64")
    frame = pd.DataFrame({"item_id": df["item_id"], "sample": df["sample"], "c": is_correct,
                          "g": is_graded, "n": 1})
    per_run = frame.groupby("sample", sort=True)[["c", "g", "n"]].sum()
    samples = [int(s) for s in per_run.index]
    # A figure per sample index, when the indices are runs: every item has each of them, or (a run that lost
    # some items) there are no more indices than items. One item of 200,000 samples beside items of one made a
    # figure per index, 10x the cost of the same rows over items; now the figures are linear in the rows.
    n_items = frame["item_id"].nunique()
    runs = len(samples) <= n_items or \
        len(frame[["item_id", "sample"]].drop_duplicates()) == n_items * len(samples)
    out: list[Figure] = []
    for denom in DENOMINATORS:
        col = "g" if denom == "graded" else "n"
        run_values = []
        for s in samples if runs else ():
            c, t = int(per_run.at[s, "c"]), int(per_run.at[s, col])
            value = c / t if t else 0.0
            if t:  # a run with nothing graded has no accuracy to spread over
                run_values.append(value)
            out.append(Figure(name=figure_name(denom, s), sample=s, denominator=denom, correct=c, total=t,
                              value=value, intervals=_intervals(c, t, None, None)))
        c, t = int(per_run["c"].sum()), int(per_run[col].sum())
        if len(samples) == 1:
            intervals = _intervals(c, t, None, None)
        elif not runs:  # items are the clusters; there are no runs to spread over
            from audit import stats

            q = frame.groupby("item_id", sort=False)[["c", col]].sum()
            q = q[q[col] > 0]
            intervals = [iv for iv in (stats.clustered_t((q["c"] / q[col]).tolist()),
                                       stats.zero_failure_upper(c, t)) if iv is not None]
        else:
            q = frame.groupby("item_id", sort=False)[["c", col]].sum()
            q = q[q[col] > 0]
            intervals = _intervals(c, t, run_values, q["c"] / q[col])
        out.append(Figure(name=figure_name(denom, None), sample=None, denominator=denom, correct=c, total=t,
                          value=c / t if t else 0.0, intervals=intervals))
    return out


def by_subject(df: pd.DataFrame, subject_of: Mapping[str, str | None]) -> dict[str, pd.DataFrame]:
    """The rows of each subject, in one pass ("" stands for none; a real subject is never empty text)."""
    key = df["item_id"].map(lambda i: subject_of.get(i) or "")
    return dict(tuple(df.groupby(key, sort=False)))


def subject_order(names: Iterable[str]) -> list[str]:
    """Subjects in natural order, none ("") last."""
    return sorted(names, key=lambda s: (s == "", natural_key(s)))


def subject_summaries(df: pd.DataFrame, subject_of: Mapping[str, str | None]) -> list[SubjectSummary]:
    """Per subject: its items (natural order) and its overall figures. Empty when no item has a subject;
    items without one form a last group (subject null) when others have one."""
    if df.empty or not any(subject_of.get(i) is not None for i in df["item_id"].unique()):
        return []
    out = []
    parts = by_subject(df, subject_of)
    for name in subject_order(parts):
        part = parts[name]
        out.append(SubjectSummary(subject=name or None, items=natural_sorted(part["item_id"].unique().tolist()),
                                  figures=[f for f in figures(part) if f.sample is None]))
    return out


def summarize(df: pd.DataFrame, subject_of: Mapping[str, str | None] | None = None) -> Summary:
    """The summary block of a verdict file; `subject_of` (item id -> subject) adds per-subject figures."""
    statuses = {str(k): int(v) for k, v in df["status"].value_counts().sort_index().items()}
    ungraded = df[df["verdict"] == "ungraded"]
    excluded = [{"item_id": r.item_id, "sample": int(r.sample), "status": r.status, "reason": r.reason}
                for r in ungraded[["item_id", "sample", "status", "reason"]].itertuples(index=False)]
    from audit.verdicts.models import SampleFigure as StoredSampleFigure

    shown = [f.model_copy(update={"intervals": shown_intervals(f)}) for f in figures(df)]
    stored = [StoredSampleFigure(name=s.name, value=s.value, items=s.items, interval=s.interval, note=s.note)
              for s in sample_figures(df)] if "answer" in df.columns else []
    return Summary(samples=int(df["sample"].nunique()) if len(df) else 0, items=int(df["item_id"].nunique()),
                   statuses=statuses, figures=shown, excluded=excluded,
                   subjects=subject_summaries(df, subject_of or {}), sample_figures=stored)


def shown_intervals(f: Figure) -> list[Interval]:
    """A figure's intervals with the Wilson and Clopper–Pearson intervals of its counts beside `binomial_2se`
    (stored from verdict file version 3 on; computed here for older files, whose counts are all either needs)."""
    from audit import stats

    have = {iv.method for iv in f.intervals}
    out: list[Interval] = []
    for iv in f.intervals:
        out.append(iv)
        if iv.method == "binomial_2se":
            out += [x for x in (stats.wilson(f.correct, f.total), stats.clopper_pearson(f.correct, f.total))
                    if x is not None and x.method not in have]
    return out


# --------------------------------------------------------------------------- several samples per item

MAJORITY_TIE_RULE = "tie_wrong"
"""How maj@k decides a tie between answers: it counts as correct only when every tied answer is correct."""


@dataclass(frozen=True)
class SampleFigure:
    """pass@k or maj@k over the items of a grading with several samples per item (shown, not stored)."""

    name: str
    """`pass@1`, `pass@8`, `maj@8`."""
    value: float
    """The figure, a fraction."""
    items: int
    """Items it averages over."""
    interval: Interval | None
    """Its named interval: `clustered_t` over the per-item values for pass@k, `wilson` over items for maj@k."""
    note: str = ""
    """What else it needs said (maj@k: the tie rule and how many items tied)."""


def sample_figures(df: pd.DataFrame) -> list[SampleFigure]:
    """pass@1 and pass@K (K samples per item; every row counts, an ungraded one as not correct) and maj@K
    (the most frequent answer of an item's K samples; rows with no answer do not vote; ties by
    `MAJORITY_TIE_RULE`). Empty for one sample per item or when items have different sample counts."""
    import pandas as pd

    from audit import stats

    if df.empty:
        return []
    counts = df.groupby("item_id", sort=False)["sample"].count()
    k = int(counts.iloc[0])
    if k < 2 or (counts != k).any():
        return []
    is_correct = df["verdict"] == "correct"
    correct = is_correct.groupby(df["item_id"], sort=False).sum()
    out = []
    for kk in sorted({1, k}):
        values = [stats.pass_at_k(k, int(c), kk) for c in correct]
        out.append(SampleFigure(name=f"pass@{kk}", value=sum(values) / len(values), items=len(values),
                                interval=stats.clustered_t(values)))
    # Votes, in columns: per (item, answer as written) the votes and whether that answer is correct.
    voting = df["answer"].notna() & (df["verdict"] != "ungraded")
    v = pd.DataFrame({"item_id": df["item_id"][voting], "answer": df["answer"][voting].str.strip(),
                      "ok": is_correct[voting]})
    wins = ties = 0
    if len(v):
        tally = v.groupby(["item_id", "answer"], sort=False)["ok"].agg(["size", "min"])
        top = tally["size"].groupby(level=0).transform("max")
        leaders = tally[tally["size"] == top]
        per_item = leaders.groupby(level=0)["min"].agg(["size", "min"])
        ties = int((per_item["size"] > 1).sum())
        wins = int(per_item["min"].astype(bool).sum())
    n_items = len(counts)
    out.append(SampleFigure(name=f"maj@{k}", value=wins / n_items, items=n_items, interval=stats.wilson(wins, n_items),
                            note=f"answers vote as written; a tie counts wrong unless every tied answer is correct "
                                 f"({MAJORITY_TIE_RULE}); {ties:,} item{'s' if ties != 1 else ''} tied"))
    return out


# --------------------------------------------------------------------------- does the spec fit the items?

ERROR_SHARE = 0.5
"""`error_share_note` speaks when more than this share of a grading's rows are `error` rows."""


def recorded_grader_note(kind: str | None, scorer: str | None, grader: str) -> str | None:
    """The note when verdicts a model-graded scorer recorded (`kind` as the import recorded it, e.g. inspect's
    model_graded_fact) are set beside a regrade by `grader` (name@version, a rule): their disagreement is the two
    graders', not a retraction by itself; else None."""
    if kind != "model-graded":
        return None
    return (f"the recorded verdicts came from a model-graded scorer ({scorer or 'unnamed'}); {grader} is not the same "
            f"grader: a verdict it changes may be the judge and the rule disagreeing, not a retraction by itself")


def error_share_note(summary: Summary) -> str | None:
    """The warning when most rows are `error` rows (not graded): the headline `accuracy` then rests on the few
    graded, e.g. 6/7 = 85.71% of a 200-row grading whose spec could not read 193 items; else None."""
    total = sum(summary.statuses.values())
    errors = summary.statuses.get("error", 0)
    if not total or errors / total <= ERROR_SHARE:
        return None
    graded = next((f.total for f in summary.figures if f.name == "accuracy"), total - errors)
    return (f"{errors:,} of {total:,} rows ({pct(errors / total)}) are error rows, not graded: `accuracy` counts "
            f"only the {graded:,} graded; the spec may not fit these items or responses (each error row's reason "
            f"says why)")
